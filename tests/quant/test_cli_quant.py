"""`tflite-viewer quant`: JSON and CSV agree with the Python API; exit codes."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from tflite_viewer.cli import main
from tflite_viewer.edit import SetQuantization
from tflite_viewer.model import load_model
from tflite_viewer.quant import analyze
from tflite_viewer.quant.metrics import METRICS

from .helpers import SMALL_FLOAT, SMALL_INT8, edited


def _strict(text):
    def bad(name):
        raise ValueError(f"non-strict JSON constant {name}")
    return json.loads(text, parse_constant=bad)


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("quant")
    rc = main(["quant", str(SMALL_INT8), "--float", str(SMALL_FLOAT), "--samples", "2",
               "--per-layer-fallback", "--csv", str(d / "out.csv"), "-o", str(d / "out.json")])
    return rc, _strict((d / "out.json").read_text()), list(csv.DictReader(open(d / "out.csv")))


def test_json_and_csv_agree_with_the_api(cli_run):
    rc, data, rows = cli_run
    assert rc == 0
    api = analyze(SMALL_INT8, SMALL_FLOAT, samples=2, per_layer_fallback=True)
    ranked = api.ranked()
    assert [t["tensor"] for t in data["tensors"][:len(ranked)]] == [t.tensor for t in ranked]
    assert [int(r["tensor"]) for r in rows[:len(ranked)]] == [t.tensor for t in ranked]
    for t, jt, row in zip(ranked, data["tensors"], rows):
        for k in METRICS:
            v = t.metrics[k]
            if v is None or not math.isfinite(v):
                assert jt["metrics"][k] is None
                continue
            assert jt["metrics"][k] == pytest.approx(v, rel=1e-12, abs=1e-15)
            assert float(row[k]) == pytest.approx(v, rel=1e-12, abs=1e-15)
        assert len(jt["per_input"]) == 2
    gains = {g.op: g.gain_db for g in api.fallback}
    assert {g["op"]: g["gain_db"] for g in data["fallback"]} == pytest.approx(gains)
    for row in rows:
        if row["fallback_gain_db"]:
            assert float(row["fallback_gain_db"]) == pytest.approx(gains[int(row["op"])])
    assert data["findings"] == [] and data["samples"] == 2
    assert data["outputs"]["sqnr_db"] == pytest.approx(api.outputs["sqnr_db"])


def test_fail_below_sqnr(capsys):
    rc = main(["quant", str(SMALL_INT8), "--float", str(SMALL_FLOAT), "--samples", "1",
               "--fail-below-sqnr", "200"])
    err = capsys.readouterr().err
    assert rc == 1 and "below 200 dB" in err and "Traceback" not in err
    assert main(["quant", str(SMALL_INT8), "--float", str(SMALL_FLOAT), "--samples", "1",
                 "--fail-below-sqnr", "-100"]) == 0


def test_spec_violation_exits_1(tmp_path, capsys):
    q = load_model(SMALL_INT8).subgraphs[0].tensors[13].quantization
    bad = edited(SMALL_INT8, SetQuantization(0, 13, q.scale, np.full(8, 3), 0))
    path = tmp_path / "bad.tflite"
    path.write_bytes(bytes(bad.data))
    rc = main(["quant", str(path), "--samples", "1"])
    out, err = capsys.readouterr()
    assert rc == 1 and "weight-zero-point" in out and "1 spec violation" in err


@pytest.mark.parametrize("args,needle", [
    (["nope.tflite"], "no such file"),
    ([str(SMALL_INT8), "--per-layer-fallback"], "needs --float"),
    ([str(SMALL_INT8), "--samples", "0"], "at least 1"),
    ([str(SMALL_INT8), "--images", "/nonexistent"], "no such folder"),
])
def test_bad_input_exits_2(args, needle, capsys):
    rc = main(["quant", *args])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and err.count("\n") == 1


def test_not_a_model_exits_2(tmp_path, capsys):
    p = tmp_path / "x.tflite"
    p.write_bytes(b"not a model at all, just bytes")
    assert main(["quant", str(p)]) == 2
    err = capsys.readouterr().err
    assert err == f"tflite-viewer quant: error: {p}: file identifier is \"a mo\", expected \"TFL3\": not a TFLite model\n"


def test_npz_and_images(tmp_path, capsys):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (3, 1, 32, 32, 3)).astype(np.float32)
    np.savez(tmp_path / "in.npz", **{"serving_default_keras_tensor_156:0": x})
    rc = main(["quant", str(SMALL_INT8), "--float", str(SMALL_FLOAT), "--inputs",
               str(tmp_path / "in.npz"), "-o", str(tmp_path / "a.json")])
    assert rc == 0 and _strict((tmp_path / "a.json").read_text())["samples"] == 3
    # a folder of images: a JPEG (written by Pillow) and a .npy
    from PIL import Image
    img = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    (tmp_path / "imgs").mkdir()
    Image.fromarray(img).save(tmp_path / "imgs" / "a.jpg", quality=95)
    np.save(tmp_path / "imgs" / "b.npy", img)
    (tmp_path / "imgs" / "notes.txt").write_text("not an image: skipped by its suffix")
    rc = main(["quant", str(SMALL_INT8), "--float", str(SMALL_FLOAT), "--images",
               str(tmp_path / "imgs"), "-o", str(tmp_path / "b.json")])
    assert rc == 0 and _strict((tmp_path / "b.json").read_text())["samples"] == 2


def test_json_and_csv_carry_the_subgraph(tmp_path, capsys):
    """lstm_dynamic vs lstm_float: rows of the loop bodies are (subgraph, tensor) in the
    text, JSON and CSV, in the API's order with the API's numbers."""
    from .helpers import MODELS
    q, f = MODELS / "lstm_dynamic.tflite", MODELS / "lstm_float.tflite"
    rc = main(["quant", str(q), "--float", str(f), "--samples", "1", "--per-layer-fallback",
               "--csv", str(tmp_path / "o.csv"), "-o", str(tmp_path / "o.json")])
    out = capsys.readouterr().out
    assert rc == 0 and "sg  2 op    2 FULLY_CONNECTED" in out
    api = analyze(q, f, samples=1, per_layer_fallback=True)
    data = _strict((tmp_path / "o.json").read_text())
    rows = list(csv.DictReader(open(tmp_path / "o.csv")))
    keys = [(t.subgraph, t.tensor) for t in api.ranked()]
    assert {k[0] for k in keys} == {0, 2, 4}
    assert [(t["subgraph"], t["tensor"]) for t in data["tensors"][:len(keys)]] == keys
    assert [(int(r["subgraph"]), int(r["tensor"])) for r in rows[:len(keys)]] == keys
    for t, row in zip(api.ranked(), rows):
        assert float(row["sqnr_db"]) == pytest.approx(t.metrics["sqnr_db"], rel=1e-12)
        assert int(row["float_subgraph"]) == t.float_subgraph
    assert [(g["subgraph"], g["op"]) for g in data["fallback"]] == [(2, 2)]
    assert data["weights"][0]["subgraph"] == 2


@pytest.mark.parametrize("sums", ["reference", None])
def test_float_sums_option(sums, tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = main(["quant", str(SMALL_INT8), "--float", str(SMALL_FLOAT), "--samples", "1",
               "-o", str(out)] + (["--float-sums", sums] if sums else []))
    assert rc == 0
    assert json.loads(out.read_text())["float_sums"] == (sums or "blas")
