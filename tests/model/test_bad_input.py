"""Malformed files: each loads or raises ModelFormatError, quickly, never anything else."""
from __future__ import annotations

import random
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import MODELS_DIR
from tests.model.walk import walk
from tflite_viewer.model import ModelFormatError, load_model

SMALL = ["sine_float.tflite", "control_flow.tflite", "multi_signature.tflite",
         "micro_speech_quantized.tflite", "sparse_conv_float.tflite", "trained_lstm_int8.tflite",
         "small_cnn_dilated_int8.tflite", "keyword_scrambled_8bit.tflite"]
TIME_LIMIT = 2.0  # seconds for one malformed file, generous for a loaded CI machine


def _load_or_reject(data: bytes) -> str:
    start = time.perf_counter()
    try:
        model = load_model(data)
        walk(model)
        outcome = "loaded"
    except ModelFormatError as exc:
        assert str(exc), "the error must say what is wrong"
        outcome = "rejected"
    assert time.perf_counter() - start < TIME_LIMIT
    return outcome


@pytest.mark.parametrize("name", SMALL)
def test_every_truncation_point_is_rejected(name):
    data = (MODELS_DIR / name).read_bytes()
    points = sorted(set(list(range(0, min(len(data), 64))) + list(range(64, len(data), max(1, len(data) // 200)))))
    outcomes = {_load_or_reject(data[:n]) for n in points}
    assert outcomes == {"rejected"}


def test_messages_name_where():
    data = (MODELS_DIR / "mobilenet_v2_float.tflite").read_bytes()
    with pytest.raises(ModelFormatError, match=r"^<file>: .*too short"):
        load_model(data[:5])
    with pytest.raises(ModelFormatError, match='file identifier is "XXXX", expected "TFL3"'):
        load_model(data[:4] + b"XXXX" + data[8:])
    with pytest.raises(ModelFormatError, match="is empty"):
        empty = MODELS_DIR.parent / "empty.tflite"
        empty.write_bytes(b"")
        try:
            load_model(empty)
        finally:
            empty.unlink()


def _set_first_input(data: bytes, value: int) -> bytes:
    model = load_model(data)
    ops = model.index.table("tflite.Operator")
    values_pos = None
    for row in range(len(ops)):
        if ops.fo["inputs"][row]:
            fpos = int(ops.pos[row] + ops.fo["inputs"][row])
            target = fpos + int.from_bytes(data[fpos:fpos + 4], "little")
            values_pos = target + 4
            sg, k = int(ops.parent[row]), int(ops.index[row])
            break
    buf = bytearray(data)
    buf[values_pos:values_pos + 4] = int(value).to_bytes(4, "little", signed=True)
    return bytes(buf), sg, k


def test_tensor_index_out_of_range_names_the_operator_input():
    data = (MODELS_DIR / "mobilenet_v2_float.tflite").read_bytes()
    bad, sg, k = _set_first_input(data, 900)
    n = len(load_model(data).subgraphs[sg].tensors)
    with pytest.raises(ModelFormatError) as info:
        load_model(bad)
    assert str(info.value) == (f"subgraphs[{sg}].operators[{k}].inputs[0]: tensor index 900 "
                               f"out of range (0..{n - 1})")


def test_absurd_vector_length_is_rejected_without_allocating():
    data = bytearray((MODELS_DIR / "sine_float.tflite").read_bytes())
    model = load_model(bytes(data))
    sgs = model.index.table("tflite.SubGraph")
    fpos = int(sgs.pos[0] + sgs.fo["tensors"][0])
    target = fpos + int.from_bytes(data[fpos:fpos + 4], "little")
    data[target:target + 4] = (0x7FFFFFFF).to_bytes(4, "little")
    with pytest.raises(ModelFormatError, match=r"subgraphs\[0\]\.tensors: vector of 2147483647"):
        load_model(bytes(data))


def test_absurd_shape_is_reported_and_data_refused():
    data = bytearray((MODELS_DIR / "sine_float.tflite").read_bytes())
    model = load_model(bytes(data))
    const = next(t for t in model.subgraphs[0].tensors if t.is_constant)
    tensors = model.index.table("tflite.Tensor")
    row = int(np.flatnonzero((tensors.parent == 0) & (tensors.index == const.index))[0])
    fpos = int(tensors.pos[row] + tensors.fo["shape"][row])
    target = fpos + int.from_bytes(data[fpos:fpos + 4], "little")
    data[target + 4:target + 8] = (2_000_000_000).to_bytes(4, "little")
    broken = load_model(bytes(data))
    assert any(f.tensor == const.index and "needs" in f.message for f in broken.findings)
    with pytest.raises(ModelFormatError, match="buffer holds"):
        broken.subgraphs[0].tensors[const.index].data()


@pytest.mark.parametrize("seed", range(4))
def test_random_bit_flips(seed):
    rng = random.Random(seed)
    names = SMALL + ["mobilenet_v1_0.25_224_quant.tflite", "ssd_mobilenet_v1.tflite"]
    outcomes = set()
    for _ in range(60):
        data = bytearray((MODELS_DIR / rng.choice(names)).read_bytes())
        limit = min(len(data), 200_000)
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(limit)
            data[pos] ^= 1 << rng.randrange(8)
        outcomes.add(_load_or_reject(bytes(data)))
    assert outcomes <= {"loaded", "rejected"}


_FUZZ_BASES = {name: (MODELS_DIR / name).read_bytes() for name in SMALL}


@settings(max_examples=520, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(name=st.sampled_from(sorted(_FUZZ_BASES)),
       edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255),
                                st.sampled_from(["set", "xor", "delete", "insert"])),
                      min_size=1, max_size=6),
       cut=st.one_of(st.none(), st.floats(0, 1)))
def test_fuzzed_models(name, edits, cut):
    data = bytearray(_FUZZ_BASES[name])
    for where, value, kind in edits:
        pos = int(where * len(data))
        if kind == "set":
            data[pos] = value
        elif kind == "xor":
            data[pos] ^= value or 1
        elif kind == "delete":
            del data[pos]
        else:
            data.insert(pos, value)
    if cut is not None:
        data = data[:int(cut * len(data))]
    _load_or_reject(bytes(data))
