"""The per-op table (model/op_metadata.py) against the schema it describes."""
from tflite_viewer.model import op_metadata, opcodes
from tflite_viewer.model.operator import SUBGRAPH_FIELDS


def test_every_builtin_op_of_the_schema_has_one_entry():
    schema_ops = set(opcodes.BUILTIN_CODES) - {"PLACEHOLDER_FOR_GREATER_OP_CODES"}
    assert set(op_metadata.OPS) == schema_ops
    assert len(op_metadata._TABLE) == len(op_metadata.OPS), "an op listed twice"


def test_entries_use_known_categories_and_roles():
    roles = {f.replace("_subgraph_index", "").replace("_indices", "")
             for fields in SUBGRAPH_FIELDS.values() for f in fields}
    for info in op_metadata.OPS.values():
        assert info.category in op_metadata.CATEGORIES[:-1], info  # "unknown": not in schema
        assert info.opens is None or info.opens in roles, info
        assert all(isinstance(pos, int) and pos >= 0 for pos in info.inputs), info
        assert not (info.broadcasts and info.keeps_shape), info


def test_lookups_fall_back_for_custom_and_unknown_ops():
    assert opcodes.category(opcodes.BUILTIN_CODES["CONV_2D"]) == "convolution"
    assert opcodes.category(opcodes.CUSTOM) == "custom"
    assert opcodes.category(9999) == "unknown"
    assert op_metadata.input_roles("MY_CUSTOM_OP") == {}
    assert op_metadata.first_call("WHILE", {"cond": 1, "body": 2}) == "body"
    assert op_metadata.first_call("IF", {"then": 1, "else": 2}) == "then"
    assert op_metadata.first_call("STABLEHLO_CASE", {"branch[0]": 1, "branch[1]": 2}) == "branch[0]"
