"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL: bit for bit equal to LiteRT's
Philox streams for seeded ops, invocation after invocation."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter

from .singleop import Input, single_op_model

F32, I32, I64 = np.float32, np.int32, np.int64


def _streams(model: bytes, inputs, runs: int = 3):
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    li = LiteRT(model_content=model)
    li.allocate_tensors()
    ours = Interpreter(model)
    for _ in range(runs):
        for d, x in zip(li.get_input_details(), inputs):
            li.set_tensor(d["index"], x)
        li.invoke()
        yield list(ours.invoke(list(inputs)).values())[0], \
            li.get_tensor(li.get_output_details()[0]["index"])


SEEDS = [(1, 0), (0, 7), (12, 34), (-5, 2**40 + 3), (2**62, -1)]


@pytest.mark.parametrize("op", ["RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL"])
@pytest.mark.parametrize("seed,seed2", SEEDS)
@pytest.mark.parametrize("shape", [(2, 5), (7,), (3, 1, 4), (1,), (0, 3), (16, 33)])
def test_seeded_random_floats_equal_litert(op, seed, seed2, shape):
    if op == "RANDOM_STANDARD_NORMAL" and int(np.prod(shape)) % 2:
        shape = shape + (2,)  # LiteRT writes one float past an odd-sized output
    model = single_op_model(op, [np.array(shape, I32)], [F32], "RandomOptions",
                            {"seed": seed, "seed2": seed2}, output_shapes=[shape])
    for ours, theirs in _streams(model, []):
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("seed,seed2", SEEDS)
@pytest.mark.parametrize("out_type", [I32, I64])
@pytest.mark.parametrize("batch,classes,samples", [(2, 4, 7), (1, 1, 3), (3, 10, 1),
                                                   (4, 5, 9)])
def test_seeded_multinomial_equals_litert(seed, seed2, out_type, batch, classes, samples):
    rng = np.random.default_rng(abs(seed) % 1000)
    logits = rng.standard_normal((batch, classes)).astype(F32) * 2
    if classes > 2:
        logits[0, 1] = -np.inf  # a class that is never drawn
    model = single_op_model("MULTINOMIAL", [Input(logits.shape), np.array(samples, I32)],
                            [out_type], "RandomOptions", {"seed": seed, "seed2": seed2})
    for ours, theirs in _streams(model, [logits]):
        np.testing.assert_array_equal(ours, theirs)
        if classes > 2 and samples:
            assert not np.any(ours[0] == 1)


def test_unseeded_ops_draw_fresh_values_in_range():
    model = single_op_model("RANDOM_UNIFORM", [np.array([1000], I32)], [F32], "RandomOptions",
                            {"seed": 0, "seed2": 0}, output_shapes=[(1000,)])
    a = list(Interpreter(model).invoke([]).values())[0]
    b = list(Interpreter(model).invoke([]).values())[0]
    assert a.min() >= 0.0 and a.max() < 1.0 and abs(float(a.mean()) - 0.5) < 0.05
    assert not np.array_equal(a, b)


def test_multinomial_of_no_samples_is_empty():
    """(LiteRT's Python wrapper cannot read the empty output back.)"""
    model = single_op_model("MULTINOMIAL", [Input((3, 4)), np.array(0, I32)], [I64],
                            "RandomOptions", {"seed": 1, "seed2": 2})
    out = list(Interpreter(model).invoke([np.zeros((3, 4), F32)]).values())[0]
    assert out.shape == (3, 0)


@pytest.mark.parametrize("algorithm,state_size", [("DEFAULT", 2), ("DEFAULT", 3),
                                                  ("PHILOX", 2), ("PHILOX", 3),
                                                  ("THREEFRY", 2)])
@pytest.mark.parametrize("out_type,shape", [(np.uint32, (3, 5)), (np.int32, (7,)),
                                            (np.uint64, (2, 3)), (np.int64, (5,))])
def test_rng_bit_generator_equals_litert(algorithm, state_size, out_type, shape):
    rng = np.random.default_rng(state_size)
    state = rng.integers(0, 2**63, state_size, dtype=np.uint64)
    state[-1] = np.uint64(2**64 - 2)  # a counter about to carry
    model = single_op_model("STABLEHLO_RNG_BIT_GENERATOR", [Input((state_size,), np.uint64)],
                            [np.uint64, out_type], "StablehloRngBitGeneratorOptions",
                            {"algorithm": algorithm},
                            output_shapes=[(state_size,), shape])
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    li = LiteRT(model_content=model)
    li.allocate_tensors()
    ours = Interpreter(model)
    for _ in range(3):  # feed the new state back: the counter advances
        li.set_tensor(li.get_input_details()[0]["index"], state)
        li.invoke()
        theirs = [li.get_tensor(d["index"]) for d in li.get_output_details()]
        mine = list(ours.invoke([state]).values())
        for a, b in zip(mine, theirs):
            np.testing.assert_array_equal(a, b)
        state = mine[0]
