"""Quantized EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL against LiteRT.

Randomized single-op cases (uint8/int8 rescaled, int16 as LiteRT treats it, the unquantized
types) are batched into a few models and checked bit for bit against LiteRT's BUILTIN_REF
kernels twice: through the integer core (integer/compare.py) and through our interpreter
running the same model (the kernel wiring).  Hand-computed cases pin what LiteRT's
rescaling does that a raw comparison of the stored integers does not.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.integer import compare as icmp

from .gen import LITERT_ROUNDING
from .harness import Case, check_cases
from tests.interpreter.singleop import Op, T, batch_model, run_batch_litert

OPS = list(icmp.OPS)
RAW = {name: fn for name, fn in icmp.OPS.items()}
#: LiteRT's op versions by input type (edit/op_version.py); the reference resolver only
#: needs the version to be registered.
_VERSION_INT8 = 2
_VERSION_INT16 = {"EQUAL": 4, "LESS": 3, "GREATER_EQUAL": 3}


def _version(op: str, dtype) -> int:
    dtype = np.dtype(dtype)
    if dtype == np.int8:
        return _VERSION_INT8
    if dtype == np.int16:
        return _VERSION_INT16.get(op, 1)
    return 1


def _scale(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def _zero_point(rng: np.random.Generator, dtype) -> int:
    info = np.iinfo(dtype)
    lo, hi = (int(info.min), int(info.max)) if np.dtype(dtype) != np.int16 else (-300, 300)
    return int(rng.integers(lo, hi + 1))


def _quantization(rng: np.random.Generator, dtype) -> tuple[tuple[float, int], tuple[float, int]]:
    """Two inputs' (scale, zero point): equal scales, very different ones, scales below
    1/256 (neighbouring codes collapse), near 1, below 2^-31 (multiplier 0), generic."""
    kind = int(rng.integers(0, 7))
    if kind == 0:  # one scale, zero points equal or not
        s = _scale(rng, 1e-3, 0.5)
        z1 = _zero_point(rng, dtype)
        return (s, z1), (s, z1 if rng.random() < 0.5 else _zero_point(rng, dtype))
    if kind == 1:  # very different scales
        pair = [(_scale(rng, 1e-4, 2e-3), _zero_point(rng, dtype)),
                (_scale(rng, 0.1, 0.95), _zero_point(rng, dtype))]
        rng.shuffle(pair)
        return pair[0], pair[1]
    if kind == 2:  # both below 1/256
        return ((_scale(rng, 1e-6, 4e-3), _zero_point(rng, dtype)),
                (_scale(rng, 1e-6, 4e-3), _zero_point(rng, dtype)))
    if kind == 3:  # close to (but below) 1
        return ((_scale(rng, 0.5, 0.999), _zero_point(rng, dtype)),
                (_scale(rng, 0.05, 0.999), _zero_point(rng, dtype)))
    if kind == 4:  # a scale so small the multiplier flushes to zero
        return ((_scale(rng, 1e-12, 3e-10), _zero_point(rng, dtype)),
                (_scale(rng, 1e-4, 0.3), _zero_point(rng, dtype)))
    if kind == 5:  # power-of-two scales: exact ties at half units of 1/256
        return ((2.0 ** -int(rng.integers(7, 13)), _zero_point(rng, dtype)),
                (2.0 ** -int(rng.integers(7, 13)), _zero_point(rng, dtype)))
    return ((_scale(rng, 0.005, 0.2), _zero_point(rng, dtype)),
            (_scale(rng, 0.005, 0.2), _zero_point(rng, dtype)))


def _shapes(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Equal shapes, broadcasting ones (size-1 axes, lower rank), up to 8-D.  (No rank-0
    tensors here: the harness's np.ascontiguousarray makes them 1-D; see test_scalars.)"""
    rank = int(rng.choice([1, 2, 3, 4, 4, 5, 6, 8]))
    small = rank > 4
    s1 = [int(rng.integers(1, 3 if small else 6)) for _ in range(rank)]
    s2 = list(s1)
    kind = int(rng.integers(0, 5))
    if kind == 1:
        s2 = [d if rng.random() < 0.5 else 1 for d in s2]
    elif kind == 2:
        s2 = s2[int(rng.integers(0, rank)):]
    elif kind == 3:
        s1 = [d if rng.random() < 0.5 else 1 for d in s1]
        s2 = [d if rng.random() < 0.5 else 1 for d in s2]
    if rng.random() < 0.5:
        s1, s2 = s2, s1
    return tuple(s1), tuple(s2)


def _near_ties(rng: np.random.Generator, s1: tuple[int, ...], s2: tuple[int, ...], dtype,
               q1: tuple[float, int], q2: tuple[float, int]) -> tuple[np.ndarray, np.ndarray]:
    """Input 1 from a few codes; input 2 mostly the codes of (nearly) the same real values
    under its own quantization, where the rescaling decides the answer."""
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    if np.dtype(dtype) == np.int16:
        lo, hi = -2000, 2000  # keep real values of both inputs in one range
    pool = rng.integers(lo, hi + 1, size=int(rng.integers(1, 4)))
    x1 = rng.choice(pool, size=s1)
    target = rng.choice(pool, size=s2)
    real = (target.astype(np.float64) - q1[1]) * q1[0]
    x2 = np.round(real / q2[0]) + q2[1] + rng.integers(-1, 2, size=s2)
    random2 = rng.integers(lo, hi + 1, size=s2)
    x2 = np.where(rng.random(size=s2) < 0.8, x2, random2)
    x2 = np.clip(x2, info.min, info.max)
    return (np.asarray(x1).astype(dtype).reshape(s1), np.asarray(x2).astype(dtype).reshape(s2))


def _random_inputs(rng, s1, s2, dtype) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    return (rng.integers(info.min, int(info.max) + 1, size=s1).astype(dtype),
            rng.integers(info.min, int(info.max) + 1, size=s2).astype(dtype))


def _quantized_case(rng, op: str, dtype) -> Case:
    s1, s2 = _shapes(rng)
    q1, q2 = _quantization(rng, dtype)
    if rng.random() < 0.7:
        x1, x2 = _near_ties(rng, s1, s2, dtype, q1, q2)
    else:
        x1, x2 = _random_inputs(rng, s1, s2, dtype)
    out = np.broadcast_shapes(s1, s2)
    o = Op(op, [T(s1, dtype, *q1), T(s2, dtype, *q2)], [T(out, np.bool_)], None, {},
           _version(op, dtype))
    label = f"{op} {np.dtype(dtype).name} {s1}x{s2} {q1} {q2}"
    return Case(o, [x1, x2], lambda: icmp.compare(op, x1, x2, q1, q2, LITERT_ROUNDING), label)


def _plain_case(rng, op: str, dtype) -> Case:
    """Unquantized inputs: float32, int32, int64, bool (EQUAL/NOT_EQUAL), int16 (EQUAL
    compares raw; LESS & co. always do)."""
    s1, s2 = _shapes(rng)
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        x1 = rng.integers(-3, 4, size=s1).astype(np.float32) / 2
        x2 = rng.integers(-3, 4, size=s2).astype(np.float32) / 2
    elif dtype == np.bool_:
        x1, x2 = rng.random(size=s1) < 0.5, rng.random(size=s2) < 0.5
    else:
        x1 = rng.integers(-3, 4, size=s1).astype(dtype) * 1000
        x2 = rng.integers(-3, 4, size=s2).astype(dtype) * 1000
    x1, x2 = np.asarray(x1, dtype).reshape(s1), np.asarray(x2, dtype).reshape(s2)
    out = np.broadcast_shapes(s1, s2)
    o = Op(op, [T(s1, dtype), T(s2, dtype)], [T(out, np.bool_)], None, {}, _version(op, dtype))
    return Case(o, [x1, x2], lambda: RAW[op](x1, x2), f"{op} plain {dtype.name} {s1}x{s2}")


def _check(cases: Sequence[Case]) -> int:
    """Every case against LiteRT through the core (the harness) and through our interpreter
    running the same batched model."""
    built = batch_model([c.op for c in cases])
    flat: list[np.ndarray] = []
    for c in cases:
        flat.extend(c.inputs)
    ours = list(Interpreter(built.model, rounding=LITERT_ROUNDING).invoke(flat).values())

    def through_interpreter(k: int, case: Case):
        core = case.ours

        def both():
            want = np.asarray(core())
            got = ours[built.outputs[k][0]]
            assert got.dtype == np.bool_ and got.shape == want.shape, case.label
            assert np.array_equal(got, want), f"{case.label}: interpreter != core"
            return want
        return both

    wrapped = [Case(c.op, c.inputs, through_interpreter(k, c), c.label)
               for k, c in enumerate(cases)]
    return check_cases(wrapped, chunk=len(wrapped))


def test_quantized_8bit_match_litert():
    rng = np.random.default_rng(2024)
    cases = [_quantized_case(rng, op, dtype)
             for dtype in (np.uint8, np.int8) for op in OPS for _ in range(60)]
    assert _check(cases) == 720


def test_int16_and_unquantized_match_litert():
    """int16: EQUAL/NOT_EQUAL rescale quantized inputs, LESS & co. compare them raw;
    float32/int32/int64/bool/int16 without quantization compare raw."""
    rng = np.random.default_rng(77)
    cases = [_quantized_case(rng, op, np.int16) for op in OPS for _ in range(25)]
    for op in OPS:
        for dtype in (np.float32, np.int32, np.int64, np.bool_, np.int16):
            if dtype == np.bool_ and op not in ("EQUAL", "NOT_EQUAL"):
                continue  # LiteRT orders no bools
            if dtype == np.int16 and op == "NOT_EQUAL":
                continue  # LiteRT writes no output (refused: test_refusals)
            cases.extend(_plain_case(rng, op, dtype) for _ in range(4))
    assert _check(cases) == 150 + 6 * 4 * 3 + 2 * 4 + 5 * 4


def _run_both(op: str, dtype, q1, q2, x1, x2, rounding: str = LITERT_ROUNDING):
    o = Op(op, [T(np.shape(x1), dtype, *q1), T(np.shape(x2), dtype, *q2)],
           [T(np.broadcast_shapes(np.shape(x1), np.shape(x2)), np.bool_)], None, {},
           _version(op, dtype))
    built = batch_model([o])
    x1, x2 = np.asarray(x1, dtype), np.asarray(x2, dtype)
    ref = run_batch_litert(built, [[x1, x2]])[0][0]
    ours = list(Interpreter(built.model, rounding=rounding).invoke([x1, x2]).values())[0]
    return ours, ref


def test_equal_reals_with_different_quantization():
    """int8 x1 = -10 + 5k at scale 0.02 and x2 = 3 + 2k at scale 0.05 both mean 0.1 k.

    By hand (double rounding): float32 0.02 is 0.0199999995529651641845703125 = 0.64 * 2^-5
    (minus 1.4e-8 relative): multiplier round(0.64 * 2^31 - ...) = 1374389504, shift -5;
    float32 0.05 = 0.0500000007450580596923828125 gives 1717986944, shift -4.  For k = 1:
    (5 << 8) = 1280 -> high mul 1280 * 1374389504 / 2^31 = 819.2 -> 819 -> /32 -> 26;
    (2 << 8) = 512 -> 409.6 -> 410 -> /16 -> 26.  Every k maps both to round(25.6 k)
    (k = -3..6: -77 -51 -26 0 26 51 77 102 128 154), so EQUAL is all true where the raw
    integers are all different (and raw LESS flips at k = 5).
    """
    k = np.arange(-3, 7)
    x1, x2 = (-10 + 5 * k).astype(np.int8), (3 + 2 * k).astype(np.int8)
    q1, q2 = (0.02, -10), (0.05, 3)
    p = icmp.prepare_comparison("EQUAL", np.int8, q1, q2)
    assert (p.input1_multiplier, p.input1_shift) == (1374389504, -5)
    assert (p.input2_multiplier, p.input2_shift) == (1717986944, -4)
    np.testing.assert_array_equal(icmp.rescale(x1, 10, 1374389504, -5),
                                  [-77, -51, -26, 0, 26, 51, 77, 102, 128, 154])
    np.testing.assert_array_equal(icmp.rescale(x2, -3, 1717986944, -4),
                                  [-77, -51, -26, 0, 26, 51, 77, 102, 128, 154])
    assert np.count_nonzero(x1 == x2) == 0
    expected = {"EQUAL": [True] * 10, "NOT_EQUAL": [False] * 10, "LESS": [False] * 10,
                "LESS_EQUAL": [True] * 10, "GREATER": [False] * 10,
                "GREATER_EQUAL": [True] * 10}
    for op, want in expected.items():
        ours, ref = _run_both(op, np.int8, q1, q2, x1, x2)
        np.testing.assert_array_equal(ref, want, err_msg=f"LiteRT {op}")
        np.testing.assert_array_equal(ours, want, err_msg=f"ours {op}")
        assert not np.array_equal(RAW[op](x1, x2), want), op  # raw integers disagree


def test_resolution_of_one_256th_and_rounding():
    """Scales below 1/256 collapse neighbouring codes: uint8 x1 - 100 = 5 at 0.001 (0.005)
    and x2 - 7 = 5 at 0.0005 (0.0025) are different reals, both 1 after rescaling
    (1.28 and 0.64 round to 1), so EQUAL says true and LESS false.

    A tie: int8 -1 at scale 2^-9 is -0.5 units of 1/256.  Double rounding (LiteRT 2.3.0)
    rounds it away from zero to -1, single rounding up to 0, so EQUAL with 0 differs."""
    for op, want in (("EQUAL", [True, True]), ("LESS", [False, False]),
                     ("GREATER", [False, False])):
        ours, ref = _run_both(op, np.uint8, (0.001, 100), (0.0005, 7), [105, 100], [12, 7])
        np.testing.assert_array_equal(ref, want, err_msg=op)
        np.testing.assert_array_equal(ours, want, err_msg=op)
    x1, x2 = np.array([-1, 1, 2], np.int8), np.array([0, 0, 0], np.int8)
    np.testing.assert_array_equal(icmp.rescale(x1, 0, 1 << 30, -8, rounding="double"),
                                  [-1, 1, 1])
    np.testing.assert_array_equal(icmp.rescale(x1, 0, 1 << 30, -8, rounding="single"),
                                  [0, 1, 1])
    ours, ref = _run_both("EQUAL", np.int8, (2.0 ** -9, 0), (0.1, 0), x1, x2)
    np.testing.assert_array_equal(ref, [False, False, False])
    np.testing.assert_array_equal(ours, ref)
    single, _ = _run_both("EQUAL", np.int8, (2.0 ** -9, 0), (0.1, 0), x1, x2, "single")
    np.testing.assert_array_equal(single, [True, False, False])


def test_int16_rescales_only_for_equality():
    """int16 0.001 * [100, 7, 5] vs 0.0005 * [200, 14, 5]: EQUAL rescales (5 * 0.001 and
    5 * 0.0005 both round to 1/256), LESS compares the raw integers."""
    x1, x2 = [100, 7, 5], [200, 14, 5]
    for op, want in (("EQUAL", [True, True, True]), ("NOT_EQUAL", [False, False, False]),
                     ("LESS", [True, True, False]), ("GREATER_EQUAL", [False, False, True])):
        ours, ref = _run_both(op, np.int16, (0.001, 0), (0.0005, 0), x1, x2)
        np.testing.assert_array_equal(ref, want, err_msg=op)
        np.testing.assert_array_equal(ours, want, err_msg=op)


def test_single_rounding_handles_scales_above_one():
    """LiteRT's double-rounding path is undefined for scales above 1 (refused); single
    rounding multiplies properly: 3 * 1.5 * 256 = 1152 and 9 * 0.5 * 256 = 1152."""
    p = icmp.prepare_comparison("EQUAL", np.int8, (1.5, 0), (0.5, 0), rounding="single")
    assert p.input1_shift == 1
    np.testing.assert_array_equal(
        icmp.compare("EQUAL", np.int8([3, 4]), np.int8([9, 9]), params=p), [True, False])
    with pytest.raises(ValueError, match="undefined behaviour"):
        icmp.prepare_comparison("EQUAL", np.int8, (1.5, 0), (0.5, 0), rounding="double")


def _expect_refusal(op: str, inputs: list[T], match: str) -> None:
    built = batch_model([Op(op, inputs, [T(np.broadcast_shapes(*(t.shape for t in inputs)), np.bool_)],
                            None, {}, 1)])
    data = [np.zeros(t.shape, t.dtype) for t in inputs]
    with pytest.raises(Exception, match=match):
        Interpreter(built.model, rounding=LITERT_ROUNDING).invoke(data)


@pytest.mark.parametrize("op, inputs, match", [
    ("LESS", [T((3,), np.int8), T((3,), np.int8)], "positive scale"),
    ("EQUAL", [T((3,), np.uint8, 0.1, 0), T((3,), np.uint8)], "input 2 has scale 0"),
    ("EQUAL", [T((3,), np.int8, 1.0, 0), T((3,), np.int8, 0.5, 0)], "scale 1.0"),
    ("GREATER", [T((3,), np.int8, 0.5, 0), T((3,), np.int8, 2.5, 0)], "undefined behaviour"),
    ("EQUAL", [T((3,), np.int8, [0.1, 0.2, 0.3], 0), T((3,), np.int8, 0.1, 0)], "per-channel"),
    ("NOT_EQUAL", [T((3,), np.int16), T((3,), np.int16)], "writes no output"),
    ("LESS", [T((1,) * 8 + (2,), np.int32), T((2,), np.int32)], "at most 8 dimensions"),
    ("EQUAL", [T((3,), np.int32), T((3,), np.int64)], "different types"),
])
def test_refusals(op, inputs, match):
    """What LiteRT aborts on (or leaves unwritten) is refused with a reason; LiteRT itself
    is not run on these (it would abort the test process)."""
    _expect_refusal(op, inputs, match)


def test_nine_dimensions_without_broadcasting_run():
    x = np.arange(-4, 4, dtype=np.int8).reshape((1,) * 6 + (2, 2, 2))
    ours, ref = _run_both("LESS", np.int8, (0.1, 0), (0.05, 1), x, x[::-1])
    np.testing.assert_array_equal(ours, ref)


def test_scalars():
    """Rank-0 inputs (broadcast against a vector, and scalar with scalar), run in LiteRT
    directly since the harness turns 0-d arrays into 1-d ones."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

    q1, q2 = (0.02, -10), (0.05, 3)
    pairs = [(np.int8(0), np.arange(-5, 6, dtype=np.int8)), (np.int8(-5), np.int8(1)),
             (np.arange(-9, 9, 3, dtype=np.int8), np.int8(-1))]
    for op in OPS:
        for x1, x2 in pairs:
            x1, x2 = np.asarray(x1), np.asarray(x2)
            built = batch_model([Op(op, [T(x1.shape, np.int8, *q1), T(x2.shape, np.int8, *q2)],
                                    [T(np.broadcast_shapes(x1.shape, x2.shape), np.bool_)], None, {},
                                    2)])
            li = LiteRT(model_content=built.model,
                        experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
            li.allocate_tensors()
            for d, x in zip(li.get_input_details(), (x1, x2)):
                li.set_tensor(d["index"], x)
            li.invoke()
            ref = li.get_tensor(li.get_output_details()[0]["index"])
            ours = list(Interpreter(built.model).invoke([x1, x2]).values())[0]
            assert ours.shape == ref.shape and np.array_equal(ours, ref), (op, x1, x2)
            np.testing.assert_array_equal(icmp.compare(op, x1, x2, q1, q2), ref)
