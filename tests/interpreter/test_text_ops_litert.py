"""LSH_PROJECTION (farmhash Fingerprint64 keys of 5 to 130 bytes) and SKIP_GRAM against
LiteRT."""
from __future__ import annotations

import flatbuffers
import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.schema import schema_generated as S

from .singleop import Input, assert_matches_litert, single_op_model

F32, I32 = np.float32, np.int32


@pytest.mark.parametrize("kind", ["SPARSE", "DENSE"])
@pytest.mark.parametrize("row_shape", [(), (3,), (7,), (15,), (31,)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [F32, I32, np.int8])
def test_lsh_projection(kind, row_shape, weighted, dtype):
    rng = np.random.default_rng(len(row_shape) * 7 + row_shape[0] if row_shape else 3)
    seeds = rng.standard_normal((3, 6)).astype(F32)
    n = 4
    x = (rng.standard_normal((n,) + row_shape) * 50).astype(dtype)
    inputs = [seeds, Input(x.shape, dtype)] + ([rng.uniform(-1, 1, n).astype(F32)]
                                               if weighted else [])
    model = single_op_model("LSH_PROJECTION", inputs, [I32], "LSHProjectionOptions",
                            {"type": kind})
    assert_matches_litert(model, [x])


def _string_io(model: bytes) -> bytes:
    m = S.ModelT.InitFromPackedBuf(model, 0)
    for t in m.subgraphs[0].tensors:
        t.type = S.TensorType.STRING
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


SENTENCES = [b"the quick brown fox jumps over the lazy dog", b" leading  and double  spaces ",
             b"one", b"", b"a b c d e f g"]


@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize("ngram,skip,include_all", [(1, 0, False), (2, 0, False), (2, 1, True),
                                                    (3, 2, False), (3, 1, True), (4, 3, True)])
def test_skip_gram(sentence, ngram, skip, include_all):
    model = _string_io(single_op_model("SKIP_GRAM", [Input((1,), np.int8)], [np.int8],
                                       "SkipGramOptions",
                                       {"ngram_size": ngram, "max_skip_size": skip,
                                        "include_all_ngrams": include_all}))
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    li = LiteRT(model_content=model)
    li.allocate_tensors()
    li.set_tensor(li.get_input_details()[0]["index"], np.array([sentence]))
    li.invoke()
    theirs = [bytes(v) for v in li.get_tensor(li.get_output_details()[0]["index"]).tolist()]
    ours = list(Interpreter(model).invoke([np.array([sentence], object)]).values())[0]
    assert [bytes(v) for v in ours.tolist()] == theirs


def _random_strings(rng, n) -> np.ndarray:
    """Random byte strings of 0 to 90 bytes (every farmhash length class)."""
    out = np.empty(n, object)
    out[:] = [rng.integers(0, 256, int(rng.choice([0, 1, 5, 13, 24, 40, 70, 90])),
                           dtype=np.uint8).tobytes() for _ in range(n)]
    return out


@pytest.mark.parametrize("kind", ["SPARSE", "DENSE"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(1,), (3,), (6,), (2, 2)])
@pytest.mark.parametrize("seed", range(4))
def test_lsh_projection_strings(kind, weighted, shape, seed):
    """A STRING input: lsh_projection.cc hashes its string buffer (count, offsets, bytes)
    cut into dim-0 equal parts, so the keys are not the strings themselves."""
    rng = np.random.default_rng(100 + seed)
    seeds = rng.standard_normal((4, int(rng.integers(1, 33)) if kind == "DENSE" else 8)
                                ).astype(F32)
    x = _random_strings(rng, int(np.prod(shape))).reshape(shape)
    inputs = [seeds, Input(shape, np.int8)] + ([rng.uniform(-1, 1, shape[0]).astype(F32)]
                                               if weighted else [])
    model = single_op_model("LSH_PROJECTION", inputs, [I32], "LSHProjectionOptions",
                            {"type": kind})
    m = S.ModelT.InitFromPackedBuf(model, 0)
    m.subgraphs[0].tensors[1].type = S.TensorType.STRING
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    model = bytes(b.Output())
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    li = LiteRT(model_content=model)
    li.allocate_tensors()
    li.set_tensor(li.get_input_details()[0]["index"], x)
    li.invoke()
    theirs = li.get_tensor(li.get_output_details()[0]["index"])
    ours = list(Interpreter(model).invoke([x]).values())[0]
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
