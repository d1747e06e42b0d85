"""`tflite-viewer edit`: edits in order, readable results, exit 2 and no file when invalid."""
from __future__ import annotations

import json

import numpy as np

from tests.conftest import MODELS_DIR
from tflite_viewer.cli import main
from tflite_viewer.model import load_model

DILATED = MODELS_DIR / "small_cnn_dilated_float.tflite"
SIG = MODELS_DIR / "multi_signature.tflite"


def _dw(path) -> int:
    return next(o.index for o in load_model(path).subgraphs[0].operators
                if o.name == "DEPTHWISE_CONV_2D")


def test_set_rename_and_print(tmp_path, capsys):
    out = tmp_path / "out.tflite"
    dw = _dw(DILATED)
    rc = main(["edit", str(DILATED), "-o", str(out), "--set", f"0:{dw}.dilation_w_factor=2",
               "--set", f"{dw}.padding=SAME", "--rename-tensor", "0:0=pixels",
               "--description", "cli edit"])
    text = capsys.readouterr().out
    assert rc == 0
    assert "raised DEPTHWISE_CONV_2D (operator_codes[2]) version 1 -> 2" in text
    assert "min_runtime_version 1.11.0 -> 1.12.0" in text
    m = load_model(out)
    op = m.subgraphs[0].operators[dw]
    assert op.builtin_options["dilation_w_factor"] == 2 and op.builtin_options["padding"] == "SAME"
    assert op.version == 2 and m.subgraphs[0].tensors[0].name == "pixels"
    assert m.description == "cli edit"


def test_other_flags_and_json(tmp_path, capsys):
    out = tmp_path / "out.tflite"
    rc = main(["edit", str(SIG), "-o", str(out), "--rename-signature", "encode=enc",
               "--rename-signature-input", "enc:x=pixels", "--rename-signature-output",
               "enc:code=latent", "--set-version", "1:0=6", "--expose", "0:2",
               "--metadata", "note=hello", "--set-quant", "0:2=0.5/3", "--json"])
    assert rc == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["edits"]) == 7 and report["output"] == str(out)
    m = load_model(out)
    enc = m.signature("enc")
    assert [t.name for t in enc.inputs] == ["pixels"] and [t.name for t in enc.outputs] == ["latent"]
    assert m.subgraphs[1].operators[0].version == 6
    assert 2 in m.subgraphs[0].outputs
    assert m.metadata_entry("note").decoded() == b"hello"
    q = m.subgraphs[0].tensors[2].quantization
    assert np.isclose(q.scale[0], 0.5) and q.zero_point[0] == 3


def test_remove_op_and_shape(tmp_path):
    src = MODELS_DIR / "mobilenet_v1_0.25_224_1_default_1.tflite"
    out = tmp_path / "out.tflite"
    model = load_model(src)
    soft = next(o for o in model.subgraphs[0].operators if o.name == "SOFTMAX")
    x = model.subgraphs[0].inputs[0]
    assert main(["edit", str(src), "-o", str(out), "--remove-op", str(soft.index),
                 "--set-shape", f"0:{x}=2,224,224,3"]) == 0
    m = load_model(out)
    assert "SOFTMAX" not in [o.name for o in m.subgraphs[0].operators]
    assert m.subgraphs[0].tensors[x].shape == (2, 224, 224, 3)


def test_invalid_edit_exits_2_with_one_line_and_no_file(tmp_path, capsys):
    out = tmp_path / "out.tflite"
    dw = _dw(DILATED)
    for bad in ([f"--set", f"{dw}.stride_w=0"], ["--set", f"{dw}.padding=DIAGONAL"],
                ["--set", f"{dw}.nonsense=1"], ["--set", "999.stride_w=1"],
                ["--rename-tensor", "0:99999=x"], ["--set", "garbage"],
                ["--set-quant", "0:1=abc"], ["--rename-signature", "nope=x"]):
        rc = main(["edit", str(DILATED), "-o", str(out), "--description", "first", *bad])
        err = capsys.readouterr().err
        assert rc == 2, bad
        assert err.count("\n") == 1 and err.startswith("tflite-viewer edit: error: "), err
        assert "Traceback" not in err
        assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_overwrite_input_without_flag(tmp_path, capsys):
    src = tmp_path / "m.tflite"
    src.write_bytes(DILATED.read_bytes())
    assert main(["edit", str(src), "-o", str(src), "--description", "x"]) == 2
    err = capsys.readouterr().err
    assert "opened model" in err and "--overwrite" in err  # the CLI's flag, not the Python keyword
    assert "overwrite_original" not in err and err.count("\n") == 1
    assert main(["edit", str(src), "-o", str(src), "--description", "x", "--overwrite"]) == 0
    assert load_model(src).description == "x"


def test_missing_model_is_a_usage_error(tmp_path, capsys):
    rc = main(["edit", str(tmp_path / "absent.tflite"), "-o", str(tmp_path / "o.tflite")])
    assert rc == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_stale_shapes_are_a_warning_and_update_shapes_writes_litert_s(tmp_path, capsys):
    """A stride edit changes what every later operator computes: the CLI says so on one
    stderr line (the window lists them in Problems), and --update-shapes writes the shapes
    LiteRT's own AllocateTensors computes for the edited model."""
    from tests.interpreter.test_shape_inference import litert_shapes
    src = MODELS_DIR / "mobilenet_v2_float.tflite"
    stale = tmp_path / "stale.tflite"
    assert main(["edit", str(src), "-o", str(stale), "--set", "0:0.stride_w=1"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: the edits made ")
    assert "--update-shapes" in err
    n = len(load_model(src).subgraphs[0].tensors)  # LiteRT adds temporaries after these
    truth = {i: shape for i, shape in litert_shapes(stale.read_bytes()).items() if i < n}
    fixed = tmp_path / "fixed.tflite"
    assert main(["edit", str(src), "-o", str(fixed), "--set", "0:0.stride_w=1",
                 "--update-shapes"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "Update " in out
    tensors = load_model(fixed).subgraphs[0].tensors
    changed = [i for i, shape in truth.items() if tuple(load_model(src).subgraphs[0].tensors[i].shape) != shape]
    assert len(changed) > 10
    assert all(tuple(tensors[i].shape) == truth[i] for i in truth)
    # a file that comes with stale shapes is not the edit's news: no warning
    assert main(["edit", str(DILATED), "-o", str(tmp_path / "d.tflite"), "--description", "x"]) == 0
    assert capsys.readouterr().err == ""
