"""HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND, HASHTABLE_SIZE (tables kept as resources
across invocations, filled once by a CALL_ONCE initializer) and HASHTABLE_LOOKUP, against
LiteRT on models the tests build."""
from __future__ import annotations

import flatbuffers
import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.schema import schema_generated as S

from .singleop import Input, Op, assert_matches_litert, graph_model, single_op_model

I32, I64 = np.int32, np.int64


def _encode_strings(values) -> bytes:
    """TFLite's string tensor buffer: count, offsets, then the bytes."""
    data = [bytes(v) for v in values]
    head = 4 * (len(data) + 2)
    offsets, pos = [], head
    for d in data:
        offsets.append(pos)
        pos += len(d)
    offsets.append(pos)
    return np.array([len(data)] + offsets, "<i4").tobytes() + b"".join(data)


def _with_strings(model: bytes, strings: dict[tuple[int, int], list[bytes] | None]) -> bytes:
    """Make tensors (subgraph, tensor) STRING: a constant gets the encoded values."""
    m = S.ModelT.InitFromPackedBuf(model, 0)
    for (sg, t), values in strings.items():
        tensor = m.subgraphs[sg].tensors[t]
        tensor.type = S.TensorType.STRING
        if values is not None:
            m.buffers[tensor.buffer].data = np.frombuffer(_encode_strings(values), np.uint8)
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


WORDS = [b"apple", b"pear", b"", b"fig", b"kiwi"]


def _table_model(key_is_string: bool) -> bytes:
    key_dtype, value_dtype = ("STRING", "INT64") if key_is_string else ("INT64", "STRING")
    opts = {"table_id": 7, "key_dtype": key_dtype, "value_dtype": value_dtype}
    keys_const = np.zeros(len(WORDS), np.int8) if key_is_string else np.arange(10, 15).astype(I64)
    values_const = np.arange(100, 105).astype(I64) if key_is_string else np.zeros(5, np.int8)
    default = np.array([-1], I64) if key_is_string else np.zeros(1, np.int8)
    query_dtype = np.int8 if key_is_string else I64
    out_dtype = I64 if key_is_string else np.int8
    # main: 0 query, 1 handle, 2 default, 3 found, 4 size
    main = [((3,), query_dtype), ((1,), I32, "resource"), (default,), ((3,), out_dtype),
            ((1,), I64)]
    ops = [Op("CALL_ONCE", [], [], "CallOnceOptions", {"init_subgraph_index": 1}),
           Op("HASHTABLE", [], [1], "HashtableOptions", opts),
           Op("HASHTABLE_FIND", [1, 0, 2], [3], "HashtableFindOptions", {}),
           Op("HASHTABLE_SIZE", [1], [4], "HashtableSizeOptions", {})]
    init = ([((1,), I32, "resource"), (keys_const,), (values_const,)],
            [Op("HASHTABLE", [], [0], "HashtableOptions", opts),
             Op("HASHTABLE_IMPORT", [0, 1, 2], [], "HashtableImportOptions", {})], [], [])
    model = graph_model(main, ops, [0], [3, 4], subgraphs=[init])
    strings = {}
    if key_is_string:
        strings = {(0, 0): None, (1, 1): WORDS}
    else:
        strings = {(0, 2): [b"?"], (0, 3): None, (1, 2): WORDS}
    return _with_strings(model, strings)


def _litert(model):
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    li = LiteRT(model_content=model)
    li.allocate_tensors()
    return li


@pytest.mark.parametrize("key_is_string", [True, False])
def test_static_hashtable_lookups_persist_across_invocations(key_is_string):
    model = _table_model(key_is_string)
    ours, li = Interpreter(model), _litert(model)
    queries = ([[b"pear", b"plum", b""], [b"fig", b"apple", b"kiwi"]] if key_is_string
               else [[11, 99, 14], [10, 12, -3]])
    for q in queries:
        x = np.array(q, dtype=object if key_is_string else I64)
        found, size = ours.invoke([x]).values()
        li.set_tensor(li.get_input_details()[0]["index"],
                      np.array(q) if key_is_string else x)
        li.invoke()
        out = li.get_output_details()
        theirs_found, theirs_size = li.get_tensor(out[0]["index"]), li.get_tensor(out[1]["index"])
        assert [bytes(v) if isinstance(v, bytes) else v for v in found.tolist()] == \
            [bytes(v) if isinstance(v, bytes) else v for v in theirs_found.tolist()]
        np.testing.assert_array_equal(size, theirs_size)
        assert int(size[0]) == 5
    ours.reset_variables()  # the table is forgotten with the variables, refilled once
    found, size = ours.invoke([np.array(queries[0], dtype=object if key_is_string else I64)]).values()
    assert int(size[0]) == 5


def test_hashtable_key_value_types_as_litert():
    model = single_op_model("HASHTABLE", [], [I32], "HashtableOptions",
                            {"table_id": 1, "key_dtype": "INT64", "value_dtype": "INT64"})
    with pytest.raises(UnsupportedOpError, match="STRING to INT64"):
        Interpreter(model)


@pytest.mark.parametrize("value_shape", [(5,), (5, 3)])
@pytest.mark.parametrize("dtype", [np.float32, I32, np.uint8])
def test_hashtable_lookup(value_shape, dtype):
    rng = np.random.default_rng(1)
    keys = np.sort(rng.choice(50, 5, replace=False)).astype(I32)
    values = rng.integers(1, 100, value_shape).astype(dtype)
    lookup = np.concatenate([keys[[3, 0]], [51, -1], keys[[4]]]).astype(I32)
    model = single_op_model("HASHTABLE_LOOKUP", [Input((5,), I32), keys, values],
                            [dtype, np.uint8])
    assert_matches_litert(model, [lookup])
