"""Behaviour of the layered layout (tflite_viewer.graph.layout) and the synthetic graphs.

No timing here: speed is measured by benchmarks/bench_layout.py.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from tflite_viewer.graph.layout import EdgePath, Layout, NodeBox, default_size, layout, naive_layout
from tflite_viewer.graph.metrics import check_layout, count_crossings, count_overlaps, total_edge_length
from benchmarks.synthetic_graphs import residual_dag

REPO = Path(__file__).resolve().parents[2]
EPS = 1e-6


# --------------------------------------------------------------------------------------
# helpers


def graph_of(edges: list[tuple[str, str]], extra_nodes: tuple[str, ...] = ()) -> nx.MultiDiGraph:
    """A MultiDiGraph in the subgraph conventions; kinds from the id prefix, edge i = tensor i."""
    g = nx.MultiDiGraph()

    def add(node: str) -> None:
        if node not in g:
            kind = {"in": "input", "out": "output"}.get(node.split(":")[0], "op")
            g.add_node(node, kind=kind)

    for node in extra_nodes:
        add(node)
    for i, (u, v) in enumerate(edges):
        add(u)
        add(v)
        g.add_edge(u, v, key=i, tensor=i)
    return g


def brute_force_crossings(lay: Layout) -> int:
    """O(E^2) count of proper intersections between polyline segments (self loops excluded)."""
    segments = []
    for e in lay.edges:
        if e.source == e.target:
            continue
        segments += list(zip(e.points, e.points[1:]))

    def orient(a, b, c) -> int:
        v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return (v > 0) - (v < 0)

    count = 0
    for (p1, p2), (q1, q2) in itertools.combinations(segments, 2):
        d1, d2 = orient(q1, q2, p1), orient(q1, q2, p2)
        d3, d4 = orient(p1, p2, q1), orient(p1, p2, q2)
        if d1 * d2 < 0 and d3 * d4 < 0:
            count += 1
    return count


def assert_sound(lay: Layout, graph: nx.MultiDiGraph, node_gap: float = 24.0) -> None:
    """check_layout is clean, gaps are respected and the reported crossings are real."""
    assert check_layout(lay, graph) == []
    assert count_overlaps(lay) == 0
    assert lay.crossings == count_crossings(lay)
    by_layer: dict[int, list[NodeBox]] = {}
    for box in lay.nodes.values():
        by_layer.setdefault(box.layer, []).append(box)
    for boxes in by_layer.values():
        boxes.sort(key=lambda b: b.x)
        for left, right in zip(boxes, boxes[1:]):
            assert right.x - left.right >= node_gap - EPS
    for box in lay.nodes.values():
        assert box.x >= -EPS and box.right <= lay.width + EPS
        assert box.y >= -EPS and box.bottom <= lay.height + EPS


def on_box(point: tuple[float, float], box: NodeBox) -> bool:
    x, y = point
    return box.x - EPS <= x <= box.right + EPS and box.y - EPS <= y <= box.bottom + EPS


SYNTHETIC = [(n, seed) for n in (40, 300, 1500) for seed in (0, 1, 2)]


@pytest.fixture(scope="module")
def synthetic_layouts() -> dict:
    """Both layouts of every synthetic graph, computed once for the module."""
    out = {}
    for n, seed in SYNTHETIC:
        g = residual_dag(n, seed=seed)
        out[(n, seed)] = (g, layout(g), naive_layout(g))
    return out


# --------------------------------------------------------------------------------------
# synthetic graphs


@pytest.mark.parametrize("n,seed", SYNTHETIC)
def test_synthetic_layout_is_sound(synthetic_layouts, n, seed):
    g, lay, naive = synthetic_layouts[(n, seed)]
    assert_sound(lay, g)
    assert_sound(naive, g)
    assert set(lay.nodes) == set(g.nodes)
    assert len(lay.edges) == g.number_of_edges()
    assert lay.reversed_edges == []
    assert not any(e.reversed for e in lay.edges)
    if n <= 40:
        assert lay.crossings == brute_force_crossings(lay)
        assert naive.crossings == brute_force_crossings(naive)


@pytest.mark.parametrize("n,seed", SYNTHETIC)
def test_every_edge_points_down_and_touches_its_boxes(synthetic_layouts, n, seed):
    g, lay, _ = synthetic_layouts[(n, seed)]
    for e in lay.edges:
        s, t = lay.nodes[e.source], lay.nodes[e.target]
        assert t.layer > s.layer and t.y > s.bottom
        ys = [y for _, y in e.points]
        assert ys == sorted(ys)
        assert e.points[0] == pytest.approx((s.center_x, s.bottom))
        assert e.points[-1] == pytest.approx((t.center_x, t.y))
        assert e.tensor == e.key == g.edges[e.source, e.target, e.key]["tensor"]


@pytest.mark.parametrize("n,seed", SYNTHETIC)
def test_fewer_crossings_than_naive(synthetic_layouts, n, seed):
    _, lay, naive = synthetic_layouts[(n, seed)]
    assert lay.crossings <= naive.crossings
    if naive.crossings > 0:
        assert lay.crossings < naive.crossings


def test_residual_graphs_gain_a_lot_over_naive(synthetic_layouts):
    _, lay, naive = synthetic_layouts[(1500, 0)]
    assert naive.crossings > 0
    assert lay.crossings * 2 < naive.crossings


def is_straight(edge: EdgePath) -> bool:
    """All dummy points of a long edge share one x: a vertical line between its two ends."""
    return len({round(x, 6) for x, _ in edge.points[1:-1]}) == 1


def test_long_edges_are_mostly_straight(synthetic_layouts):
    """Only long edges that cross another long edge (or the trunk) have to bend."""
    long_edges = [e for _, lay, _ in synthetic_layouts.values() for e in lay.edges if len(e.points) > 2]
    assert sum(map(is_straight, long_edges)) >= 0.7 * len(long_edges)


def test_residual_blocks_are_straight_lines():
    """A trunk with nested and consecutive skips: trunk and skips all vertical, no crossing."""
    trunk = [f"op:{i}" for i in range(12)]
    edges = [("in:0", "op:0")] + list(zip(trunk, trunk[1:])) + [("op:11", "out:1")]
    edges += [("op:0", "op:5"), ("op:1", "op:4"), ("op:5", "op:9"), ("op:9", "op:11")]
    g = graph_of(edges)
    lay = layout(g)
    assert_sound(lay, g)
    assert lay.crossings == 0
    assert len({lay.nodes[t].center_x for t in trunk}) == 1
    long_edges = [e for e in lay.edges if len(e.points) > 2]
    assert len(long_edges) == 4 and all(map(is_straight, long_edges))


def test_layout_is_deterministic():
    g = residual_dag(800, seed=5)
    a, b = layout(g), layout(g)
    assert a == b
    assert a.to_json() == b.to_json()
    c = layout(residual_dag(800, seed=5))
    assert c.to_json() == a.to_json()


def test_layout_is_independent_of_hash_seed():
    script = (
        "import hashlib, json, networkx as nx\n"
        "from tflite_viewer.graph.layout import layout\n"
        "from benchmarks.synthetic_graphs import residual_dag\n"
        "g = residual_dag(300, seed=3)\n"
        "h = nx.MultiDiGraph()\n"
        "h.add_nodes_from([('b', {'kind': 'op'}), ('a', {'kind': 'op'}), ('c', {'kind': 'op'})])\n"
        "h.add_edges_from([('a', 'b', 0), ('b', 'c', 1), ('c', 'a', 2), ('a', 'c', 3)])\n"
        "blob = json.dumps([layout(g).to_json(), layout(h).to_json()], sort_keys=True)\n"
        "print(hashlib.sha256(blob.encode()).hexdigest())\n"
    )
    digests = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(REPO))
        out = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_sweeps_zero_still_valid():
    g = residual_dag(200, seed=1)
    lay = layout(g, sweeps=0, coord_rounds=0)
    assert_sound(lay, g)


def test_custom_sizes_and_gaps():
    g = residual_dag(400, seed=2)
    rng = random.Random(0)
    sizes = {node: (rng.uniform(10, 300), rng.uniform(5, 90)) for node in g.nodes}
    lay = layout(g, lambda node, attrs: sizes[node], layer_gap=30.0, node_gap=10.0)
    assert_sound(lay, g, node_gap=10.0)
    for node, box in lay.nodes.items():
        assert (box.width, box.height) == sizes[node]
    # Boxes are centred in their layer, layers are as tall as their tallest box, and
    # consecutive layers are exactly layer_gap apart.
    layers: dict[int, list[NodeBox]] = {}
    for box in lay.nodes.values():
        layers.setdefault(box.layer, []).append(box)
    bands = []
    for index in sorted(layers):
        boxes = layers[index]
        assert len({round(b.y + b.height / 2, 6) for b in boxes}) == 1
        bands.append((min(b.y for b in boxes), max(b.bottom for b in boxes)))
    for (_, bottom), (top, _) in zip(bands, bands[1:]):
        assert top - bottom == pytest.approx(30.0)


def test_default_sizes():
    g = residual_dag(30)
    lay = layout(g)
    for box in lay.nodes.values():
        assert (box.width, box.height) == default_size(box.id, {"kind": box.kind})
    kinds = {box.kind for box in lay.nodes.values()}
    assert kinds == {"op", "input", "output"}
    assert lay.nodes["in:0"].layer == 0
    assert (lay.nodes["in:0"].width, lay.nodes["in:0"].height) == (80.0, 28.0)


def test_to_json_shape():
    lay = layout(residual_dag(60, seed=4))
    data = json.loads(json.dumps(lay.to_json()))
    assert set(data) >= {"nodes", "edges", "crossings", "width", "height"}
    assert data["crossings"] == lay.crossings
    node = data["nodes"][0]
    assert set(node) >= {"id", "kind", "x", "y", "width", "height", "layer"}
    assert all(isinstance(n["id"], str) for n in data["nodes"])
    edge = data["edges"][0]
    assert set(edge) >= {"source", "target", "tensor", "points"}
    assert all(len(p) == 2 for e in data["edges"] for p in e["points"])


def test_edge_lengths_are_measured():
    lay = layout(graph_of([("op:0", "op:1")]))
    (edge,) = lay.edges
    assert total_edge_length(lay) == pytest.approx(48.0)
    assert edge.points == ((60.0, 40.0), (60.0, 88.0))


# --------------------------------------------------------------------------------------
# hand-made graphs


HAND_MADE = {
    "empty": graph_of([]),
    "single": graph_of([], ("op:0",)),
    "diamond": graph_of([("in:0", "op:0"), ("op:0", "op:1"), ("op:0", "op:2"), ("op:1", "op:3"), ("op:2", "op:3"), ("op:3", "out:9")]),
    "parallel": graph_of([("op:0", "op:1"), ("op:0", "op:1"), ("op:0", "op:1"), ("op:1", "op:2")]),
    "parallel_long": graph_of([("op:0", "op:1"), ("op:1", "op:2"), ("op:0", "op:2"), ("op:0", "op:2")]),
    "self_loop": graph_of([("in:0", "op:0"), ("op:0", "op:0"), ("op:0", "out:1")]),
    "two_cycle": graph_of([("op:0", "op:1"), ("op:1", "op:0")]),
    "cycle": graph_of([("in:0", "op:0"), ("op:0", "op:1"), ("op:1", "op:2"), ("op:2", "op:3"), ("op:3", "op:0"), ("op:3", "out:5")]),
    "no_source_cycle": graph_of([("op:0", "op:1"), ("op:1", "op:2"), ("op:2", "op:0")]),
    "disconnected": graph_of([("op:0", "op:1"), ("op:2", "op:3"), ("op:3", "op:4"), ("op:5", "op:4")], ("op:9", "op:8")),
    "fan": graph_of([("in:0", f"op:{i}") for i in range(1, 9)] + [(f"op:{i}", "op:99") for i in range(1, 9)]),
    "late_input": graph_of([("in:0", "op:0"), ("op:0", "op:1"), ("op:1", "op:2"), ("op:2", "op:3"), ("in:7", "op:3")]),
    "constant_op": graph_of([("in:0", "op:0"), ("op:0", "op:1"), ("op:1", "op:2"), ("op:2", "op:3"), ("op:7", "op:3")]),
}


@pytest.mark.parametrize("name", sorted(HAND_MADE))
@pytest.mark.parametrize("fn", [layout, naive_layout])
def test_hand_made_graphs(name, fn):
    g = HAND_MADE[name]
    lay = fn(g)
    assert_sound(lay, g)
    assert len(lay.nodes) == g.number_of_nodes()
    assert len(lay.edges) == g.number_of_edges()
    assert lay.crossings == brute_force_crossings(lay)
    for e in lay.edges:
        assert on_box(e.points[0], lay.nodes[e.source])
        assert on_box(e.points[-1], lay.nodes[e.target])


def test_empty_graph():
    lay = layout(HAND_MADE["empty"])
    assert (lay.nodes, lay.edges, lay.crossings, lay.width, lay.height) == ({}, [], 0, 0.0, 0.0)
    assert lay.to_json()["nodes"] == []


def test_single_node():
    lay = layout(HAND_MADE["single"])
    box = lay.nodes["op:0"]
    assert (box.x, box.y, box.width, box.height, box.layer) == (0.0, 0.0, 120.0, 40.0, 0)
    assert (lay.width, lay.height) == (120.0, 40.0)


def test_self_loop_is_drawn_and_reported():
    g = HAND_MADE["self_loop"]
    lay = layout(g)
    (loop,) = [e for e in lay.edges if e.source == e.target]
    assert loop.reversed
    assert ("op:0", "op:0", 1) in lay.reversed_edges
    box = lay.nodes["op:0"]
    assert on_box(loop.points[0], box) and on_box(loop.points[-1], box)
    assert max(x for x, _ in loop.points) <= lay.width + EPS
    assert lay.nodes["in:0"].layer < box.layer < lay.nodes["out:1"].layer


@pytest.mark.parametrize("name", ["two_cycle", "cycle", "no_source_cycle"])
def test_cycles_are_broken_by_reversing_edges(name):
    g = HAND_MADE[name]
    lay = layout(g)
    assert len(lay.reversed_edges) == 1
    (rev,) = [e for e in lay.edges if e.reversed]
    assert (rev.source, rev.target, rev.key) == lay.reversed_edges[0]
    # Drawn against the flow: from the source's top up to the target's bottom.
    s, t = lay.nodes[rev.source], lay.nodes[rev.target]
    assert s.layer > t.layer
    assert rev.points[0] == pytest.approx((s.center_x, s.y))
    assert rev.points[-1] == pytest.approx((t.center_x, t.bottom))
    # Removing the reversed edges leaves a DAG that the layers respect.
    dag = g.copy()
    dag.remove_edges_from(lay.reversed_edges)
    assert nx.is_directed_acyclic_graph(dag)


def test_cycle_is_broken_at_the_feedback_edge():
    lay = layout(HAND_MADE["cycle"])
    assert lay.reversed_edges == [("op:3", "op:0", 4)]
    assert [lay.nodes[f"op:{i}"].layer for i in range(4)] == [1, 2, 3, 4]


def test_parallel_edges_are_all_drawn():
    g = HAND_MADE["parallel_long"]
    lay = layout(g)
    keys = sorted((e.source, e.target, e.key) for e in lay.edges)
    assert keys == sorted(g.edges(keys=True))
    long_ones = [e for e in lay.edges if (e.source, e.target) == ("op:0", "op:2")]
    assert len(long_ones) == 2 and all(len(e.points) > 2 for e in long_ones)


def test_inputs_stay_on_top_and_constant_ops_move_down():
    late = layout(HAND_MADE["late_input"])
    assert late.nodes["in:7"].layer == 0
    const = layout(HAND_MADE["constant_op"])
    # An op fed only by constants sits right above its consumer, not in the top row.
    assert const.nodes["op:7"].layer == const.nodes["op:3"].layer - 1
    loose = layout(HAND_MADE["late_input"], pin_inputs=False)
    assert loose.nodes["in:7"].layer == loose.nodes["op:3"].layer - 1


def test_disconnected_components_do_not_overlap():
    g = HAND_MADE["disconnected"]
    lay = layout(g)
    assert_sound(lay, g)
    assert lay.nodes["op:4"].layer == lay.nodes["op:3"].layer + 1


def test_matching_wired_to_cross_is_untangled():
    """Two edges a->d, b->c: the naive (graph) order crosses once, the optimum is 0."""
    g = graph_of([("op:a", "op:d"), ("op:b", "op:c")], ("op:a", "op:b", "op:c", "op:d"))
    assert naive_layout(g).crossings == 1
    assert layout(g).crossings == 0


def test_k22_gets_its_one_unavoidable_crossing():
    g = graph_of([("op:a", "op:c"), ("op:a", "op:d"), ("op:b", "op:c"), ("op:b", "op:d")])
    assert layout(g).crossings == 1 == brute_force_crossings(layout(g))


def test_scrambled_tree_gets_no_crossings():
    """A tree can always be drawn without crossings; insertion order is scrambled."""
    rng = random.Random(7)
    edges = [(f"op:{(i - 1) // 3}", f"op:{i}") for i in range(1, 121)]
    nodes = [f"op:{i}" for i in range(121)]
    rng.shuffle(nodes)
    rng.shuffle(edges)
    g = graph_of(edges, tuple(nodes))
    assert naive_layout(g).crossings > 0
    lay = layout(g)
    assert lay.crossings == 0
    assert_sound(lay, g)


def test_ladder_wired_to_cross_is_untangled():
    """Two parallel chains with rungs, nodes listed so that every rung crosses at first."""
    edges = []
    for i in range(10):
        edges += [(f"op:l{i}", f"op:l{i + 1}"), (f"op:r{i}", f"op:r{i + 1}"), (f"op:l{i}", f"op:r{i + 1}")]
    nodes = tuple(f"op:{side}{i}" for i in range(11) for side in (("r", "l") if i % 2 else ("l", "r")))
    g = graph_of(edges, nodes)
    assert naive_layout(g).crossings > 0
    assert layout(g).crossings == 0


def test_non_string_ids_and_plain_digraph():
    g = nx.DiGraph()
    g.add_edges_from([(1, 2), (2, 3), (1, 3), ((4, "x"), 3)])
    lay = layout(g)
    assert check_layout(lay, g) == []
    assert {n["id"] for n in lay.to_json()["nodes"]} == {"1", "2", "3", "(4, 'x')"}


# --------------------------------------------------------------------------------------
# count_crossings and check_layout on arbitrary layouts


def random_layout(rng: random.Random, n_edges: int, monotone: bool) -> Layout:
    edges = []
    for i in range(n_edges):
        k = rng.randint(2, 5)
        ys = [rng.uniform(0, 100) for _ in range(k)]
        if monotone:
            ys.sort()
        pts = tuple((rng.uniform(0, 100), y) for y in ys)
        edges.append(EdgePath(f"s{i}", f"t{i}", i, i, pts, False))
    return Layout({}, edges, 0, 100.0, 100.0)


@pytest.mark.parametrize("seed", range(12))
def test_count_crossings_matches_brute_force_on_random_layouts(seed):
    rng = random.Random(seed)
    lay = random_layout(rng, rng.randint(2, 25), monotone=seed % 2 == 0)
    assert count_crossings(lay) == brute_force_crossings(lay)


@pytest.mark.parametrize("seed", range(8))
def test_count_crossings_matches_brute_force_on_small_random_graphs(seed):
    rng = random.Random(100 + seed)
    n = rng.randint(4, 14)
    edges = [(f"op:{rng.randrange(n)}", f"op:{rng.randrange(n)}") for _ in range(rng.randint(3, 30))]
    g = graph_of(edges, tuple(f"op:{i}" for i in range(n)))
    for lay in (layout(g), naive_layout(g), layout(g, sweeps=0)):
        assert_sound(lay, g)
        assert count_crossings(lay) == brute_force_crossings(lay) == lay.crossings


def test_count_crossings_ignores_shared_endpoints_and_self_loops():
    fan = (
        EdgePath("a", "b", 0, 0, ((0.0, 0.0), (-5.0, 10.0)), False),
        EdgePath("a", "c", 1, 1, ((0.0, 0.0), (5.0, 10.0)), False),
        EdgePath("a", "a", 2, 2, ((0.0, 0.0), (0.0, 5.0), (9.0, 5.0), (9.0, -5.0), (0.0, 0.0)), True),
        EdgePath("d", "e", 3, 3, ((-5.0, 0.0), (5.0, 10.0)), False),
    )
    lay = Layout({}, list(fan), 0, 10.0, 10.0)
    # d->e crosses a->b once; a->c and a->b only share their start; the loop is ignored.
    assert count_crossings(lay) == 1


def test_check_layout_reports_problems():
    g = graph_of([("op:0", "op:1"), ("op:1", "op:2")])
    good = layout(g)
    assert check_layout(good, g) == []
    b0, b1, b2 = (good.nodes[f"op:{i}"] for i in range(3))
    e01, e12 = good.edges

    def broken(nodes: dict, edges: list) -> str:
        return "\n".join(check_layout(Layout(nodes, edges, 0, good.width, good.height), g))

    missing = broken({"op:1": b1, "op:2": b2}, [e12])
    assert "op:0 not placed" in missing and "op:0->op:1 [0] not drawn" in missing

    stray = NodeBox("op:3", "op", b2.x + 10, b2.y, 120, 40, b2.layer)
    extra = broken({**good.nodes, "op:3": stray}, [e01, e12, e12])
    assert "op:3 is not in the graph" in extra
    assert "overlap in layer 2" in extra
    assert "drawn twice" in extra

    upside_down = {**good.nodes, "op:2": NodeBox("op:2", "op", b2.x, b0.y - 200, b2.width, b2.height, b2.layer)}
    assert "op:1->op:2 [1] does not point downward" in broken(upside_down, [e01, e12])

    detached = EdgePath(e12.source, e12.target, e12.key, e12.tensor, ((-50.0, -50.0), (-60.0, -60.0)), False)
    loose = broken(dict(good.nodes), [e01, detached])
    assert "does not start on its source" in loose and "does not end on its target" in loose


# --------------------------------------------------------------------------------------
# synthetic generator


@pytest.mark.parametrize("n,seed", [(0, 0), (1, 0), (7, 3), (500, 1), (3000, 2)])
def test_residual_dag_shape(n, seed):
    g = residual_dag(n, seed=seed)
    kinds = [d["kind"] for _, d in g.nodes(data=True)]
    assert kinds.count("op") == n
    assert kinds.count("input") == 1 and kinds.count("output") == 1
    assert nx.is_directed_acyclic_graph(g)
    assert all(k == d["tensor"] for _, _, k, d in g.edges(keys=True, data=True))
    # One producer per tensor, as in TFLite.
    producers: dict[int, set] = {}
    for u, _, t in g.edges(data="tensor"):
        producers.setdefault(t, set()).add(u)
    assert all(len(p) == 1 for p in producers.values())
    if n:
        assert nx.is_weakly_connected(g)
        assert g.in_degree("in:0") == 0
        (out,) = [v for v, d in g.nodes(data=True) if d["kind"] == "output"]
        assert g.out_degree(out) == 0 and g.in_degree(out) == 1


def test_residual_dag_has_skips_branches_and_parallel_edges():
    g = residual_dag(2000, seed=0)
    opcodes = [d.get("opcode") for _, d in g.nodes(data=True)]
    assert opcodes.count("ADD") > 300
    assert opcodes.count("CONCATENATION") > 20
    assert any(g.number_of_edges(u, v) > 1 for u, v in g.edges())
    order = {node: i for i, node in enumerate(nx.topological_sort(g))}
    longest = max(order[v] - order[u] for u, v in g.edges())
    assert longest > 10  # residual skips span several ops


def test_residual_dag_is_deterministic():
    a, b, c = residual_dag(400, seed=9), residual_dag(400, seed=9), residual_dag(400, seed=10)
    def dump(g):
        return (list(g.nodes(data=True)), list(g.edges(keys=True, data=True)))
    assert dump(a) == dump(b)
    assert dump(a) != dump(c)
