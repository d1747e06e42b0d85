"""Synthetic operator graphs shaped like real TFLite subgraphs.

The layout has to be fast and readable on graphs with tens of thousands of operators, but
the sample models are small. These generators make graphs with the structure that matters
for a layered layout - a long trunk, residual skips of varying length, inception-style
fan-out/merge blocks, ops with two outputs feeding the same consumer (parallel edges) - at
any size, deterministically for a seed, so tests and benchmarks are reproducible.

They follow the conventions of the graph built from a real subgraph: a
``networkx.MultiDiGraph`` whose nodes are ``"op:N"``, ``"in:T"`` and ``"out:T"`` with a
``kind`` attribute (``"op"``, ``"input"``, ``"output"``), and whose edges are tensors
(edge key = tensor index, attribute ``tensor``). As in TFLite a tensor has one producer and
may have several consumers, so one tensor index can label several edges out of the same
producer; every tensor index is produced exactly once.
"""

from __future__ import annotations

import random

import networkx as nx

__all__ = ["residual_dag"]

_PLAIN_OPCODES = (
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "RELU",
    "FULLY_CONNECTED",
    "MUL",
    "LOGISTIC",
    "MEAN",
    "RESHAPE",
    "SOFTMAX",
    "BATCH_MATMUL",
)


class _Builder:
    """Accumulates nodes and edges in plain lists; the graph is built once at the end.

    Adding everything with one ``add_nodes_from`` / ``add_edges_from`` call is several times
    faster than growing the networkx graph op by op, which matters for the 20k-op benchmark.
    """

    def __init__(self) -> None:
        self.nodes: list[tuple[str, dict]] = []
        self.edges: list[tuple[str, str, int, dict]] = []
        self.n_tensors = 0
        self.n_ops = 0

    def new_tensor(self) -> int:
        self.n_tensors += 1
        return self.n_tensors - 1

    def add_io(self, kind: str, tensor: int) -> str:
        node = f"{'in' if kind == 'input' else 'out'}:{tensor}"
        self.nodes.append((node, {"kind": kind, "tensor": tensor}))
        return node

    def add_op(self, opcode: str, inputs: list[tuple[str, int]], n_outputs: int = 1) -> tuple[str, list[int]]:
        """Add an op consuming ``(producer, tensor)`` pairs; returns its id and output tensors."""
        node = f"op:{self.n_ops}"
        self.nodes.append((node, {"kind": "op", "index": self.n_ops, "opcode": opcode}))
        self.n_ops += 1
        for producer, tensor in inputs:
            self.edges.append((producer, node, tensor, {"tensor": tensor}))
        return node, [self.new_tensor() for _ in range(n_outputs)]

    def connect(self, producer: str, tensor: int, consumer: str) -> None:
        self.edges.append((producer, consumer, tensor, {"tensor": tensor}))

    def build(self) -> nx.MultiDiGraph:
        graph = nx.MultiDiGraph()
        graph.add_nodes_from(self.nodes)
        graph.add_edges_from(self.edges)
        return graph


def residual_dag(
    n_ops: int,
    seed: int = 0,
    skip_prob: float = 0.3,
    max_skip: int = 12,
    *,
    branch_prob: float = 0.04,
    split_prob: float = 0.02,
) -> nx.MultiDiGraph:
    """A CNN/transformer-like DAG of exactly ``n_ops`` operators.

    The trunk is a chain of ops. At each step, with probability ``skip_prob`` the next op is
    an ``ADD`` of the trunk and a trunk tensor from 2..``max_skip`` steps back (a residual
    connection); with ``branch_prob`` an inception block fans out into 2-4 short branches
    merged by a ``CONCATENATION``; with ``split_prob`` a ``SPLIT`` with two outputs feeds
    both into the next op (parallel edges between the same pair of nodes). One input node
    feeds the first op and one output node takes the last op's tensor.
    """
    if n_ops < 0:
        raise ValueError("n_ops must be >= 0")
    rng = random.Random(seed)
    b = _Builder()
    in_tensor = b.new_tensor()
    # Trunk history of (producer node, tensor): where residual skips start from.
    trunk: list[tuple[str, int]] = [(b.add_io("input", in_tensor), in_tensor)]

    while b.n_ops < n_ops:
        remaining = n_ops - b.n_ops
        cur = trunk[-1]
        r = rng.random()
        if r < skip_prob and len(trunk) > 2:
            k = rng.randint(2, min(max_skip, len(trunk) - 1))
            node, outs = b.add_op("ADD", [cur, trunk[-1 - k]])
        elif r < skip_prob + branch_prob and remaining >= 4:
            node, outs = _inception(b, rng, cur, remaining)
        elif r < skip_prob + branch_prob + split_prob and remaining >= 2:
            split, (t0, t1) = b.add_op("SPLIT", [cur], n_outputs=2)
            node, outs = b.add_op("MUL", [(split, t0), (split, t1)])
        else:
            node, outs = b.add_op(rng.choice(_PLAIN_OPCODES), [cur])
        trunk.append((node, outs[0]))

    last_node, last_tensor = trunk[-1]
    b.connect(last_node, last_tensor, b.add_io("output", last_tensor))
    return b.build()


def _inception(b: _Builder, rng: random.Random, cur: tuple[str, int], budget: int) -> tuple[str, list[int]]:
    """Fan ``cur`` out into 2-4 branches of 1-3 ops and merge them; uses at most ``budget`` ops."""
    n_branches = rng.randint(2, 4)
    ends: list[tuple[str, int]] = []
    used = 1  # the merging CONCATENATION
    for _ in range(n_branches):
        length = rng.randint(1, 3)
        if used + length > budget:
            break
        end = cur
        for _ in range(length):
            node, outs = b.add_op(rng.choice(_PLAIN_OPCODES), [end])
            end = (node, outs[0])
        used += length
        ends.append(end)
    if not ends:
        ends.append(cur)
    return b.add_op("CONCATENATION", ends)
