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
