"""Every command on real models, with LiteRT (or hand-computed values) as the oracle."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tests.edit.helpers import run_litert
from tests.litert_oracle import litert
from tflite_viewer.edit import (ExposeTensor, ModelDocument, RemoveCustomOption, RemoveMetadata,
                                RemoveOperator, RenameSignature, RenameSignatureTensor,
                                RenameTensor, ReplaceTensorData, SetCustomOption,
                                SetDescription, SetMetadata, SetOpVersion, SetOption,
                                SetQuantization, SetTensorShape, unpack)
from tflite_viewer.model import EditError, load_model
from tflite_viewer.schema import schema_generated as S

FLOAT_V1 = MODELS_DIR / "mobilenet_v1_0.25_224_1_default_1.tflite"
QUANT_V1 = MODELS_DIR / "mobilenet_v1_0.25_224_quant.tflite"
DILATED = MODELS_DIR / "small_cnn_dilated_float.tflite"


def _op(model, name: str, nth: int = 0):
    return [o for o in model.subgraphs[0].operators if o.name == name][nth]


def _depthwise_reference(x, w, bias, stride, dilation, padding, act):
    """NHWC depthwise convolution (depth multiplier 1) in float64, as TFLite defines it."""
    n, h, wd, c = x.shape
    _, kh, kw, _ = w.shape
    eff_h, eff_w = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-wd // stride)
        pad_h = max((oh - 1) * stride + eff_h - h, 0) // 2
        pad_w = max((ow - 1) * stride + eff_w - wd, 0) // 2
    else:
        oh, ow = (h - eff_h) // stride + 1, (wd - eff_w) // stride + 1
        pad_h = pad_w = 0
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad_h, eff_h), (pad_w, eff_w), (0, 0)))
    out = np.zeros((n, oh, ow, c))
    for i in range(kh):
        for j in range(kw):
            rows = xp[:, i * dilation: i * dilation + stride * oh: stride]
            out += rows[:, :, j * dilation: j * dilation + stride * ow: stride] * w[0, i, j]
    out += bias
    if act == "RELU6":
        out = np.clip(out, 0, 6)
    elif act == "RELU":
        out = np.maximum(out, 0)
    return out


@pytest.mark.parametrize("path", [DILATED, FLOAT_V1], ids=["small_cnn_dilated_float", "mobilenet_v1"])
def test_depthwise_dilation_raises_version_and_litert_computes_it(path):
    doc = ModelDocument(path)
    dw = _op(doc.model, "DEPTHWISE_CONV_2D")
    assert dw.version == 1
    result = doc.apply(SetOption(0, dw.index, "dilation_w_factor", 2))
    doc.apply(SetOption(0, dw.index, "dilation_h_factor", "2"))
    assert [(r.op, r.old, r.new) for r in result.raised_versions] == [("DEPTHWISE_CONV_2D", 1, 2)]
    dw = doc.model.subgraphs[0].operators[dw.index]
    assert dw.version == 2 and dw.builtin_options["dilation_w_factor"] == 2
    if doc.original.min_runtime_version:
        assert doc.model.min_runtime_version == "1.12.0" or \
            doc.model.min_runtime_version == doc.original.min_runtime_version
    interp, _ = run_litert(doc.to_bytes())
    x = interp.get_tensor(dw.inputs[0])
    w = interp.get_tensor(dw.inputs[1])
    b = interp.get_tensor(dw.inputs[2])
    want = _depthwise_reference(x, w, b, dw.builtin_options["stride_w"], 2,
                                dw.builtin_options["padding"],
                                dw.builtin_options["fused_activation_function"])
    got = interp.get_tensor(dw.outputs[0])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_min_runtime_version_follows_a_raised_version():
    doc = ModelDocument(DILATED)
    assert doc.model.min_runtime_version == "1.11.0"
    dw = _op(doc.model, "DEPTHWISE_CONV_2D")
    result = doc.apply(SetOption(0, dw.index, "dilation_w_factor", 2))
    assert result.min_runtime_changed == ("1.11.0", "1.12.0")
    assert doc.model.min_runtime_version == "1.12.0"
    assert len(doc.model.metadata_entry("min_runtime_version").data) == 16


def test_enum_and_float_and_bool_options():
    doc = ModelDocument(FLOAT_V1)
    conv = _op(doc.model, "CONV_2D", 1)
    doc.apply(SetOption(0, conv.index, "fused_activation_function", "RELU"))
    soft = _op(doc.model, "SOFTMAX")
    doc.apply(SetOption(0, soft.index, "beta", 0.5))
    ops = doc.model.subgraphs[0].operators
    assert ops[conv.index].builtin_options["fused_activation_function"] == "RELU"
    assert ops[soft.index].builtin_options["beta"] == 0.5
    # LiteRT: softmax with beta 0.5 of the logits.
    interp, (probs,) = run_litert(doc.to_bytes())
    logits = interp.get_tensor(ops[soft.index].inputs[0]).astype(np.float64) * 0.5
    want = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(probs, want, rtol=1e-4, atol=1e-6)


def test_builtin_options_2_field():
    tree = unpack(load_model(FLOAT_V1))
    op = tree.model.subgraphs[0].operators[0]
    op.builtinOptions2Type = S.BuiltinOptions2.StablehloConcatenateOptions
    op.builtinOptions2 = S.StablehloConcatenateOptionsT()
    from tflite_viewer.edit import serialize
    doc = ModelDocument(serialize(tree))
    assert doc.model.subgraphs[0].operators[0].builtin_options_2_type == "StablehloConcatenateOptions"
    doc.apply(SetOption(0, 0, "dimension", 3))
    assert doc.model.subgraphs[0].operators[0].builtin_options_2 == {"dimension": 3}
    with pytest.raises(EditError, match="dimension"):
        doc.apply(SetOption(0, 0, "dimension", 3, table="builtin_options"))


def test_custom_options_set_add_remove_and_litert_sees_them():
    path = MODELS_DIR / "ssd_mobilenet_v1.tflite"
    doc = ModelDocument(path)
    post = _op(doc.model, "TFLite_Detection_PostProcess")
    doc.apply(SetCustomOption(0, post.index, "max_detections", "3"))
    doc.apply(SetCustomOption(0, post.index, "my_note", "hello"))
    opts = doc.model.subgraphs[0].operators[post.index].custom_options
    assert opts["max_detections"] == 3 and opts["my_note"] == "hello"
    assert opts["num_classes"] == 90  # the other keys are kept
    doc.apply(RemoveCustomOption(0, post.index, "my_note"))
    assert "my_note" not in doc.model.subgraphs[0].operators[post.index].custom_options
    _, outputs = run_litert(doc.to_bytes())
    assert outputs[0].shape == (1, 3, 4)  # boxes: max_detections rows
    _, before = run_litert(load_model(path).data.tobytes())
    assert before[0].shape == (1, 10, 4)
    with pytest.raises(EditError, match="no key"):
        doc.apply(RemoveCustomOption(0, post.index, "absent"))
    with pytest.raises(EditError, match="not a custom op"):
        doc.apply(SetCustomOption(0, 0, "x", 1))


def test_rename_tensor_is_what_litert_reports():
    doc = ModelDocument(FLOAT_V1)
    doc.apply(RenameTensor(0, 5, "renamed"))
    interp = litert(doc.to_bytes())
    assert {d["index"]: d["name"] for d in interp.get_tensor_details()}[5] == "renamed"


def test_shape_signature_and_shape_warnings():
    doc = ModelDocument(FLOAT_V1)
    x = doc.model.subgraphs[0].inputs[0]
    doc.apply(SetTensorShape(0, x, [1, 224, 224, 3], [-1, 224, 224, 3]))
    details = litert(doc.to_bytes()).get_input_details()[0]
    assert list(details["shape_signature"]) == [-1, 224, 224, 3]
    result = doc.apply(SetTensorShape(0, x, [1, 112, 112, 3]))
    assert list(doc.model.subgraphs[0].tensors[x].shape_signature) == [-1, 112, 112, 3]
    assert any("operators[0] (CONV_2D)" in w for w in result.warnings)
    assert list(litert(doc.to_bytes()).get_input_details()[0]["shape"]) == [1, 112, 112, 3]
    weights = _op(doc.model, "CONV_2D").inputs[1]
    with pytest.raises(EditError, match="constant data"):
        doc.apply(SetTensorShape(0, weights, [1, 2, 3]))
    with pytest.raises(EditError, match=">= 0"):
        doc.apply(SetTensorShape(0, x, [1, -1, 3]))


def test_new_quantization_changes_litert_dequantized_output_by_hand():
    doc = ModelDocument(QUANT_V1)
    reshape = _op(doc.model, "RESHAPE")
    logits = reshape.outputs[0]
    doc.apply(ExposeTensor(0, logits))
    doc.apply(SetQuantization(0, logits, [0.5], [100]))
    interp, outputs = run_litert(doc.to_bytes())
    detail = next(d for d in interp.get_output_details() if d["index"] == logits)
    assert detail["quantization"] == (0.5, 100)
    raw = interp.get_tensor(logits)
    # RESHAPE copies the bytes: the stored values are the original's, their meaning is new.
    ref, _ = run_litert(load_model(QUANT_V1).data.tobytes())
    np.testing.assert_array_equal(raw, ref.get_tensor(logits))
    by_hand = (raw.astype(np.float64) - 100) * 0.5
    old = ref.get_tensor_details()[logits]["quantization"]
    assert old != (0.5, 100)
    tensor = doc.model.subgraphs[0].tensors[logits]
    np.testing.assert_array_equal(tensor.quantization.dequantize(raw), by_hand.astype(np.float32))


def test_per_channel_quantization_reaches_litert():
    path = MODELS_DIR / "mobilenet_v2_int8.tflite"
    doc = ModelDocument(path)
    conv = _op(doc.model, "CONV_2D")
    w = doc.model.subgraphs[0].tensors[conv.inputs[1]]
    n = w.shape[0]
    scales = np.linspace(0.001, 0.002, n).astype(np.float32)
    doc.apply(SetQuantization(0, w.index, scales, [0] * n, 0))
    details = {d["index"]: d for d in litert(doc.to_bytes()).get_tensor_details()}
    qp = details[w.index]["quantization_parameters"]
    np.testing.assert_array_equal(qp["scales"], scales)
    assert qp["quantized_dimension"] == 0
    with pytest.raises(EditError, match="scales for dimension"):
        doc.apply(SetQuantization(0, w.index, scales[:-1], [0] * (n - 1), 0))
    with pytest.raises(EditError, match="zero points"):
        doc.apply(SetQuantization(0, w.index, scales, [0, 0], 0))
    with pytest.raises(EditError, match="out of range"):
        doc.apply(SetQuantization(0, w.index, scales, [0] * n, 7))
    with pytest.raises(EditError, match="outside the range"):
        doc.apply(SetQuantization(0, w.index, [0.1], [300]))


def test_replace_constant_data_is_what_litert_reads():
    doc = ModelDocument(FLOAT_V1)
    conv = _op(doc.model, "CONV_2D")
    bias = doc.model.subgraphs[0].tensors[conv.inputs[2]]
    new = np.arange(bias.shape[0], dtype=np.float32) / 7
    doc.apply(ReplaceTensorData(0, bias.index, new))
    interp = litert(doc.to_bytes())
    interp.allocate_tensors()
    np.testing.assert_array_equal(interp.get_tensor(bias.index), new)
    with pytest.raises(EditError, match="shape"):
        doc.apply(ReplaceTensorData(0, bias.index, new[:-1]))
    with pytest.raises(EditError, match="dtype"):
        doc.apply(ReplaceTensorData(0, bias.index, new.astype(np.float64)))
    with pytest.raises(EditError, match="not a constant"):
        doc.apply(ReplaceTensorData(0, doc.model.subgraphs[0].inputs[0], new))


def test_requantized_data_uses_the_tensor_scale():
    doc = ModelDocument(QUANT_V1)
    conv = _op(doc.model, "CONV_2D")
    w = doc.model.subgraphs[0].tensors[conv.inputs[1]]
    scale, zp = float(w.quantization.scale[0]), int(w.quantization.zero_point[0])
    values = np.random.default_rng(1).uniform(-1, 1, w.shape).astype(np.float32)
    doc.apply(ReplaceTensorData(0, w.index, values, requantize=True))
    want = np.clip(np.floor(np.abs(values / scale) + 0.5) * np.sign(values) + zp, 0, 255).astype(np.uint8)
    interp = litert(doc.to_bytes())
    interp.allocate_tensors()
    np.testing.assert_array_equal(interp.get_tensor(w.index), want)


def test_op_version_set_and_refused_by_litert_when_too_high():
    doc = ModelDocument(FLOAT_V1)
    result = doc.apply(SetOpVersion(0, 0, 2))
    assert any("shared" in w for w in result.warnings)
    assert all(o.version == 2 for o in doc.model.subgraphs[0].operators if o.name == "CONV_2D")
    run_litert(doc.to_bytes())  # the float kernel serves version 2
    doc.apply(SetOpVersion(0, 0, 99))
    with pytest.raises(Exception, match="version"):
        litert(doc.to_bytes()).allocate_tensors()
    with pytest.raises(EditError, match="at 1"):
        doc.apply(SetOpVersion(0, 0, 0))


def test_signature_renames_are_visible_to_litert_signature_runner():
    path = MODELS_DIR / "multi_signature.tflite"
    doc = ModelDocument(path)
    doc.apply(RenameSignature("encode", "enc"))
    doc.apply(RenameSignatureTensor("enc", "inputs", "x", "pixels"))
    doc.apply(RenameSignatureTensor("enc", "outputs", "code", "latent"))
    interp = litert(doc.to_bytes())
    sigs = interp.get_signature_list()
    assert sigs["enc"] == {"inputs": ["pixels"], "outputs": ["latent"]}
    assert "encode" not in sigs
    x = np.random.default_rng(0).standard_normal(
        litert(path).get_signature_runner("encode").get_input_details()["x"]["shape"]).astype(np.float32)
    want = litert(path).get_signature_runner("encode")(x=x)["code"]
    got = interp.get_signature_runner("enc")(pixels=x)["latent"]
    np.testing.assert_array_equal(got, want)
    with pytest.raises(EditError, match="already exists"):
        doc.apply(RenameSignature("enc", "decode"))
    with pytest.raises(EditError, match="no signature"):
        doc.apply(RenameSignature("nope", "x"))


def test_description_and_metadata():
    doc = ModelDocument(QUANT_V1)
    doc.apply(SetDescription("fixed by tflite-viewer"))
    doc.apply(SetMetadata("my_notes", "calibrated on 2024 data"))
    assert doc.model.description == "fixed by tflite-viewer"
    assert doc.model.metadata_entry("my_notes").decoded() == b"calibrated on 2024 data"
    assert doc.model.associated_files() == ["labels.txt"]  # the zip is still there
    doc.apply(RemoveMetadata("my_notes"))
    assert doc.model.metadata_entry("my_notes") is None
    run_litert(doc.to_bytes())


def test_exposed_intermediate_equals_litert_intermediate():
    doc = ModelDocument(FLOAT_V1)
    conv = _op(doc.model, "CONV_2D", 3)
    t = conv.outputs[0]
    doc.apply(ExposeTensor(0, t))
    interp, outputs = run_litert(doc.to_bytes())
    names = [d["index"] for d in interp.get_output_details()]
    assert names[-1] == t
    ref, _ = run_litert(load_model(FLOAT_V1).data.tobytes())
    np.testing.assert_array_equal(outputs[-1], ref.get_tensor(t))
    with pytest.raises(EditError, match="already an output"):
        doc.apply(ExposeTensor(0, t))


def test_expose_adds_to_signatures():
    doc = ModelDocument(MODELS_DIR / "multi_signature.tflite")
    sg = doc.model.subgraphs[0]
    inner = next(i for op in sg.operators for i in op.outputs if i not in sg.outputs)
    doc.apply(ExposeTensor(0, inner, name="hidden"))
    sigs = litert(doc.to_bytes()).get_signature_list()
    assert sigs["decode"]["outputs"] == ["hidden", "recon"]  # LiteRT lists them sorted
    assert sigs["encode"]["outputs"] == ["code"]


def test_remove_softmax_rewires_the_subgraph_output():
    doc = ModelDocument(FLOAT_V1)
    soft = _op(doc.model, "SOFTMAX")
    logits = soft.inputs[0]
    result = doc.apply(RemoveOperator(0, soft.index))
    assert result.scope.structural
    assert doc.model.subgraphs[0].outputs == (logits,)
    assert "SOFTMAX" not in [o.name for o in doc.model.subgraphs[0].operators]
    _, (out,) = run_litert(doc.to_bytes())
    ref, _ = run_litert(load_model(FLOAT_V1).data.tobytes())
    np.testing.assert_array_equal(out, ref.get_tensor(logits))


def test_remove_relu_rewires_consumers():
    path = MODELS_DIR / "face_detection_short_range.tflite"
    doc = ModelDocument(path)
    relu = _op(doc.model, "RELU")
    src, dst = relu.inputs[0], relu.outputs[0]
    consumers = [o.index - 1 for o in doc.model.subgraphs[0].operators if dst in o.inputs]
    doc.apply(RemoveOperator(0, relu.index))
    ops = doc.model.subgraphs[0].operators
    assert all(src in ops[k].inputs and dst not in ops[k].inputs for k in consumers)
    interp, _ = run_litert(doc.to_bytes())
    ref, _ = run_litert(load_model(path).data.tobytes())
    np.testing.assert_array_equal(interp.get_tensor(src), ref.get_tensor(src))
    with pytest.raises(EditError, match="different output"):
        doc.apply(RemoveOperator(0, _op(doc.model, "CONV_2D").index))


def test_replacing_a_shared_buffer_gives_the_tensor_its_own():
    from tflite_viewer.edit import serialize
    tree = unpack(load_model(FLOAT_V1))
    sg = tree.model.subgraphs[0]
    by_shape: dict = {}
    for k, t in enumerate(sg.tensors):
        data = tree.model.buffers[t.buffer].data
        if data is not None and len(data):
            by_shape.setdefault((tuple(t.shape), t.type), []).append(k)
    a, b = next(v for v in by_shape.values() if len(v) >= 2)[:2]
    sg.tensors[b].buffer = sg.tensors[a].buffer  # deduplicated constants, as converters do
    doc = ModelDocument(serialize(tree))
    before = doc.to_bytes()
    n_buffers = len(doc.model.buffers)
    ta = doc.model.subgraphs[0].tensors[a]
    new = np.full(ta.shape, 0.25, np.float32)
    doc.apply(ReplaceTensorData(0, a, new))
    m = doc.model
    assert len(m.buffers) == n_buffers + 1 and m.subgraphs[0].tensors[a].buffer == n_buffers
    np.testing.assert_array_equal(m.subgraphs[0].tensors[a].data(), new)
    np.testing.assert_array_equal(m.subgraphs[0].tensors[b].data(),
                                  load_model(before).subgraphs[0].tensors[b].data())
    doc.undo()
    assert doc.to_bytes() == before


def test_shape_warning_from_the_op_table():
    """ADD_N's entry in model/op_metadata.py (keeps_shape) is all the shape check needs."""
    from tests.interpreter.singleop import Input, single_op_model
    model = single_op_model("ADD_N", [Input((2, 3)), Input((2, 3))], [np.float32],
                            output_shapes=[(2, 3)])
    doc = ModelDocument(model)
    result = doc.apply(SetTensorShape(0, 0, [2, 4]))
    assert any("operators[0] (ADD_N)" in w and "[2, 3] but its inputs give [2, 4]" in w
               for w in result.warnings), result.warnings
    result = doc.apply(SetTensorShape(0, 0, [2, 3]))
    assert not any("ADD_N" in w for w in result.warnings), result.warnings
