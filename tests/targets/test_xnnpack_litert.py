"""XNNPACK: our partitions equal LiteRT's own.

The oracle is LiteRT 2.3.0 with its default delegate: after ``allocate_tensors()``,
``_get_ops_details()`` lists one DELEGATE node per partition with the partition's input and
output tensors (primary subgraph).  Every corpus model LiteRT loads, every single-op case
(tests/targets/cases.py: ops x types x the options and shapes the rules single out), and a
few multi-operator graphs where the partitioner has work to do.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.interpreter.singleop import Op, graph_model
from tests.targets import cases
from tests.targets.oracles import xnnpack_partitions
from tflite_viewer.model import load_model
from tflite_viewer.targets import xnnpack
from tflite_viewer.delegation.facts import ModelFacts

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
# LiteRT cannot be the oracle for these: it crashes (heap corruption) on the first and
# refuses the second's quantization parameters (tests/data/models/MANIFEST.md).
NOT_IN_LITERT = {"keyword_scrambled_8bit.tflite", "person_detect.tflite"}
CORPUS = sorted(p for p in MODELS.glob("*.tflite") if p.name not in NOT_IN_LITERT)


def ours(model: bytes) -> list[tuple[list[int], list[int]]]:
    result = xnnpack.analyze(ModelFacts(load_model(model)))
    return [(p.inputs, p.outputs) for p in result.partitions if p.subgraph == 0]


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_corpus_partitions_equal_litert(path):
    data = path.read_bytes()
    assert ours(data) == xnnpack_partitions(data)


def test_corpus_spans_one_to_many_partitions():
    """The corpus exercises the partitioner, not just all-or-nothing."""
    counts = {p.stem: len(xnnpack_partitions(p.read_bytes())) for p in CORPUS}
    assert max(counts.values()) >= 4 and min(counts.values()) >= 1, counts


@pytest.fixture(scope="module")
def single_ops() -> dict[str, bytes]:
    return cases.all_cases()


def test_every_single_op_case_agrees(single_ops):
    mismatches = {}
    for name, data in single_ops.items():
        theirs, mine = xnnpack_partitions(data), ours(data)
        if theirs != mine:
            mismatches[name] = (theirs, mine)
    assert not mismatches, mismatches


def test_single_op_cases_cover_both_verdicts(single_ops):
    taken = sum(1 for d in single_ops.values() if xnnpack_partitions(d))
    assert 80 <= taken <= len(single_ops) - 60, taken  # many of each


def test_refused_single_ops_say_why(single_ops):
    """Every operator the delegate leaves has a reason naming the rule."""
    for name, data in single_ops.items():
        result = xnnpack.analyze(ModelFacts(load_model(data)))
        for v in result.ops:
            assert (v.verdict == "runs") == bool(result.partitions), name
            if v.verdict != "runs":
                assert v.reason and v.reason != "not taken", (name, v.reason)


def with_primary(data: bytes, k: int) -> bytes:
    """The model with subgraphs 0 and k swapped (control-flow options renumbered), so that
    LiteRT's ``_get_ops_details()``, which lists the primary subgraph only, shows k's."""
    import flatbuffers

    from tflite_viewer.schema import schema_generated as S

    m = S.ModelT.InitFromPackedBuf(data, 0)
    perm = {0: k, k: 0}
    m.subgraphs[0], m.subgraphs[k] = m.subgraphs[k], m.subgraphs[0]
    for sg in m.subgraphs:
        for op in sg.operators or []:
            opts = op.builtinOptions
            for name in ("condSubgraphIndex", "bodySubgraphIndex", "thenSubgraphIndex",
                         "elseSubgraphIndex", "initSubgraphIndex"):
                if opts is not None and hasattr(opts, name):
                    i = getattr(opts, name)
                    setattr(opts, name, perm.get(i, i))
    for sig in m.signatureDefs or []:
        sig.subgraphIndex = perm.get(sig.subgraphIndex, sig.subgraphIndex)
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


MULTI = ["control_flow", "lstm_float", "lstm_dynamic", "multi_signature", "microwakeword_alexa"]


@pytest.mark.parametrize("stem", MULTI)
def test_every_subgraph_partitions_equal_litert(stem):
    """Subgraphs past the first (loop bodies, conditions, signatures): LiteRT offers each to
    the delegate too; made primary one at a time, LiteRT's DELEGATE nodes are ours."""
    data = (MODELS / f"{stem}.tflite").read_bytes()
    result = xnnpack.analyze(ModelFacts(load_model(data)))
    n = len(load_model(data).subgraphs)
    assert n > 1
    for k in range(1, n):
        mine = [(p.inputs, p.outputs) for p in result.partitions if p.subgraph == k]
        assert mine == xnnpack_partitions(with_primary(data, k)), k


def _chain(acts: list[str]) -> bytes:
    """x -> op0 -> op1 -> ... with ADD (XNNPACK takes it) and CAST round trips (it does
    not), so claimed and refused operators alternate and partitions split and merge."""
    tensors = [((1, 8), np.float32)]
    ops = []
    for kind in acts:
        a = len(tensors) - 1
        if kind == "add":
            tensors.append(((1, 8), np.float32))
            ops.append(Op("ADD", [a, a], [len(tensors) - 1], "AddOptions", {}))
        else:
            tensors.append(((1, 8), np.int32))
            ops.append(Op("CAST", [a], [len(tensors) - 1]))
            tensors.append(((1, 8), np.float32))
            ops.append(Op("CAST", [len(tensors) - 2], [len(tensors) - 1]))
    return graph_model(tensors, ops, [0], [len(tensors) - 1])


def _diamond() -> bytes:
    """Two branches from one input, one refused (CAST) and one taken (ADD), joined by a
    taken ADD: LiteRT's greedy epochs decide what goes with what."""
    f, i = np.float32, np.int32
    tensors = [((1, 4), f), ((1, 4), f), ((1, 4), i), ((1, 4), f), ((1, 4), f), ((1, 4), f)]
    ops = [Op("ADD", [0, 0], [1], "AddOptions", {}), Op("CAST", [0], [2]),
           Op("CAST", [2], [3]), Op("ADD", [1, 1], [4], "AddOptions", {}),
           Op("ADD", [4, 3], [5], "AddOptions", {})]
    return graph_model(tensors, ops, [0], [5, 1])


def _fp16_weights(shared: bool) -> bytes:
    """float16 weights DEQUANTIZEd for a CONV_2D (unpacked ahead of time), and, when
    ``shared``, also read by a refused operator (the delegate gives the DEQUANTIZE back)."""
    f = np.float32
    w = np.random.default_rng(0).standard_normal((4, 1, 1, 3)).astype(np.float16)
    tensors = [((1, 4, 4, 3), f), (w,), ((4, 1, 1, 3), f), (np.zeros(4, f),),
               ((1, 4, 4, 4), f), ((4, 1, 1, 3), np.int32)]
    ops = [Op("DEQUANTIZE", [1], [2], version=3),
           Op("CONV_2D", [0, 2, 3], [4], "Conv2DOptions",
              {"padding": "SAME", "stride_w": 1, "stride_h": 1})]
    outputs = [4]
    if shared:
        ops.append(Op("CAST", [2], [5]))
        outputs.append(5)
    return graph_model(tensors, ops, [0], outputs)


GRAPHS = {
    "alternating": lambda: _chain(["add", "cast", "add", "add", "cast", "add"]),
    "refused-first": lambda: _chain(["cast", "add", "add"]),
    "diamond": _diamond,
    "fp16-weights": lambda: _fp16_weights(False),
    "fp16-weights-shared": lambda: _fp16_weights(True),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_multi_op_graphs_agree(name):
    data = GRAPHS[name]()
    theirs = xnnpack_partitions(data)
    assert ours(data) == theirs
    if name == "alternating":
        assert len(theirs) == 3  # the CAST pairs cut the chain


def test_contract_lists_partition_ops_in_creation_order():
    data = GRAPHS["alternating"]()
    result = xnnpack.analyze(ModelFacts(load_model(data)))
    assert [p.ops for p in result.partitions] == [[0], [3, 4], [7]]
    for p in result.partitions:
        for k in p.ops:
            assert result.ops[k].verdict == "runs"
