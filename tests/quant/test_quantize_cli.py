"""`tflite-viewer quantize`: the model ``litert quantize`` would write (litert-cli 0.2's
steps: the quantizer's ``recipe.NAME()`` or the JSON loaded, ``Quantizer.calibrate`` on
the calibration data, ``Quantizer.quantize``), its flags and defaults, the recipe saved,
the samples of ``quant``, and one line and no file for every bad input, also without the
quantizer installed."""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tflite_viewer.cli import main
from tflite_viewer.model import load_model

from . import llm_pairs as lp
from .helpers import MODELS, SMALL_FLOAT, SMALL_INT8

ROOT = Path(__file__).resolve().parents[2]
CONV = lp.CONVERTER / "conv_net_float.tflite"


@functools.cache
def litert_quantize(path: str, recipe: str, data_json: str | None = None) -> bytes:
    """What ``litert quantize PATH --recipe NAME`` (or ``--custom-recipe`` a file) writes,
    calibrated on ``data_json`` ({signature: [{input: list}]}) or on 3 seeded samples of
    every signature (seed 100)."""
    from litert_quantizer import quantizer
    from litert_quantizer import recipe as recipes
    qt = quantizer.Quantizer(path)
    qt.load_quantization_recipe(getattr(recipes, recipe)() if not recipe.endswith(".json")
                                else json.loads(Path(recipe).read_text()))
    calibration = None
    if qt.need_calibration:
        data = lp.signature_inputs(load_model(path), 3, seed=100) if data_json is None else {
            k: [{n: np.asarray(v, np.float32) for n, v in x.items()} for x in xs]
            for k, xs in json.loads(data_json).items()}
        calibration = qt.calibrate(data)
    return bytes(qt.quantize(calibration, enable_progress_bar=False,
                             enable_progress_report=False).quantized_model)


def _one_line_error(capsys, words: str, after_work: bool = False) -> None:
    """One error line; before it, only when the quantizer refused the model after its work
    began, its progress and notes."""
    out, err = capsys.readouterr()
    *before, last = err.splitlines()
    assert out == "" and err.endswith("\n") and words in last, err
    assert last.startswith("tflite-viewer quantize: error: ")
    assert all(ln.startswith(("[", "tflite-viewer quantize: calibrating")) for ln in before) \
        if after_work else not before, err


@pytest.mark.parametrize("recipe", ["dynamic_wi4b32_afp32", "static_wi8_ai8"])
def test_the_model_is_litert_quantize_s(recipe, tmp_path, capsys):
    out = tmp_path / "q.tflite"
    assert main(["quantize", str(lp.TINY_FLOAT), "-o", str(out), "--recipe", recipe,
                 "--samples", "3", "--seed", "100"]) == 0
    text, err = capsys.readouterr()
    assert out.read_bytes() == litert_quantize(str(lp.TINY_FLOAT), recipe)
    assert text.startswith(f"{lp.TINY_FLOAT} -> {out}: {out.stat().st_size:,} bytes (")
    assert f"), recipe {recipe}\n" in text and "weights written:\n" in text
    lines = err.splitlines()
    # progress as quant writes it, and nothing of the quantizer's own (bars, warnings, logs)
    notes = [ln for ln in lines if not ln.startswith("[")]
    assert notes == (["tflite-viewer quantize: calibrating on 3 seeded samples per signature "
                      "(give --calibration-data or --images for real data)"]
                     if recipe.startswith("static") else [])
    assert lines[-1].startswith("[") and lines[-1].endswith("] done")
    assert sorted(tmp_path.iterdir()) == [out]  # no temporary file left


def test_litert_quantize_s_defaults(tmp_path, capsys):
    """No -o, no --recipe: MODEL_quant.tflite beside the model, dynamic_wi8_afp32."""
    model = tmp_path / "conv.tflite"
    shutil.copy(CONV, model)
    assert main(["quantize", str(model)]) == 0
    assert (tmp_path / "conv_quant.tflite").read_bytes() == \
        litert_quantize(str(CONV), "dynamic_wi8_afp32")
    assert "recipe dynamic_wi8_afp32" in capsys.readouterr().out


def test_the_saved_recipe_is_litert_quantize_s_custom_recipe(tmp_path, capsys):
    out, saved = tmp_path / "q.tflite", tmp_path / "recipe.json"
    args = ["quantize", str(lp.TINY_FLOAT), "-o", str(out), "--recipe", "dynamic_wi4b32_afp32",
            "--override", "Linear_w2=dynamic_wi8_afp32", "--keep-float", "0:56",
            "--keep-float", "EMBEDDING_LOOKUP", "--save-recipe", str(saved), "--json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert out.read_bytes() == litert_quantize(str(lp.TINY_FLOAT), str(saved))
    assert doc["recipe"] == json.loads(saved.read_text()) and len(doc["recipe"]) == 4
    assert doc["output"] == str(out) and doc["bytes"] == out.stat().st_size
    assert [(s["flag"], s["selector"], s["kind"], len(s["ops"])) for s in doc["selectors"]] == [
        ("--override", "Linear_w2", "name", 3), ("--keep-float", "0:56", "op", 1),
        ("--keep-float", "EMBEDDING_LOOKUP", "type", 2)]
    assert doc["selectors"][0]["settings"] == {"dynamic w8 channel": 3}
    # the weights written, one per FULLY_CONNECTED (17) but 0:56's, which stays float: the
    # 3 w2 ones in INT8, the rest INT4 blocks; the embedding tables stay float
    forms = {(w["type_name"], w["form"]): w["count"] for w in doc["weights"]}
    assert forms == {("INT4", "blockwise"): 13, ("INT8", "per-channel"): 3}, forms
    again = tmp_path / "again.tflite"
    assert main(["quantize", str(lp.TINY_FLOAT), "-o", str(again), "--custom-recipe",
                 str(saved)]) == 0
    assert again.read_bytes() == out.read_bytes()
    assert f"recipe {saved}" in capsys.readouterr().out


def test_calibration_data_an_npz_or_litert_quantize_s_script(tmp_path, capsys):
    (name,) = [m.name for m in load_model(SMALL_FLOAT).signature("serving_default").inputs]
    x = np.random.default_rng(5).uniform(-1, 1, (3, 1, 32, 32, 3)).astype(np.float32)
    np.savez(tmp_path / "cal.npz", **{name: x})
    data = json.dumps({"serving_default": [{name: x[k].tolist()} for k in range(3)]})
    script = tmp_path / "calib.py"
    script.write_text("import json, numpy as np\n"
                      f"DATA = json.loads({data!r})\n"
                      "def get_calibration_data():\n"
                      "    return {k: [{n: np.asarray(v, np.float32) for n, v in x.items()}\n"
                      "                for x in xs] for k, xs in DATA.items()}\n")
    want = litert_quantize(str(SMALL_FLOAT), "static_wi8_ai8", data)
    for source in ("cal.npz", "calib.py"):
        out = tmp_path / f"q_{source}.tflite"
        assert main(["quantize", str(SMALL_FLOAT), "-o", str(out), "--recipe", "static_wi8_ai8",
                     "--calibration-data", str(tmp_path / source)]) == 0
        assert out.read_bytes() == want, source
        text, err = capsys.readouterr()
        assert "calibrated on 3 sample(s) of serving_default" in text
        assert "seeded" not in err
    # samples a recipe does not use are said so
    assert main(["quantize", str(SMALL_FLOAT), "-o", str(tmp_path / "d.tflite"),
                 "--calibration-data", str(tmp_path / "cal.npz")]) == 0
    assert "the recipe needs no calibration; the samples given are not used" in \
        capsys.readouterr().err


def test_calibration_on_images_and_the_model_on_stdout(tmp_path):
    """--images DIR calibrates on the folder as quant samples it (`image_samples`); -o -
    writes the model's bytes to stdout and nothing else."""
    from PIL import Image

    from tflite_viewer.quant.samples import image_samples
    rng = np.random.default_rng(9)
    for k in range(2):
        Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)).save(
            tmp_path / f"im{k}.png")
    model = load_model(SMALL_FLOAT)
    (name,) = [m.name for m in model.signature("serving_default").inputs]
    data = json.dumps({"serving_default": [{name: np.asarray(x[0], np.float32).tolist()}
                                           for x in image_samples(model, tmp_path)]})
    r = subprocess.run([sys.executable, "-m", "tflite_viewer", "quantize", str(SMALL_FLOAT),
                        "-o", "-", "--recipe", "static_wi8_ai8", "--images", str(tmp_path)],
                       capture_output=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout == litert_quantize(str(SMALL_FLOAT), "static_wi8_ai8", data)


def _errors(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    (tmp_path / "broken.json").write_text("[{")
    (tmp_path / "bad.py").write_text("def get_calibration_data():\n    return 1 / 0\n")
    (tmp_path / "none.py").write_text("X = 1\n")
    f = str(lp.TINY_FLOAT)
    return {
        "unknown recipe": ([f, "--recipe", "dynamic_wi4_b32"], "unknown recipe 'dynamic_wi4_b32'"),
        "selects nothing": ([f, "--keep-float", "no_such_layer"],
                            "selector 'no_such_layer' matches no op"),
        "not a regex": ([f, "--override", "*attn*=dynamic_wi8_afp32"],
                        "not a valid regular expression"),
        "no =": ([f, "--override", "FULLY_CONNECTED"], "give SELECTOR=RECIPE"),
        "bad JSON": ([f, "--custom-recipe", str(tmp_path / "broken.json")], "not valid JSON"),
        "no recipe file": ([f, "--custom-recipe", str(tmp_path / "gone.json")], "no such file"),
        "quantized": ([str(SMALL_INT8)], "already quantized"),
        "refused": ([str(MODELS / "control_flow.tflite"), "--recipe", "static_wi8_ai8",
                     "--samples", "1"],
                    "the quantizer refused it: ValueError: Tensor data is null"),
        "container": ([str(lp.LLM / "tiny_llama.litertlm")], "not a .tflite file"),
        "script raises": ([str(SMALL_FLOAT), "--recipe", "static_wi8_ai8", "--calibration-data",
                           str(tmp_path / "bad.py")], "the script raised ZeroDivisionError"),
        "no function": ([str(SMALL_FLOAT), "--recipe", "static_wi8_ai8", "--calibration-data",
                         str(tmp_path / "none.py")], "defines no get_calibration_data()"),
        "wrong signature": ([str(SMALL_FLOAT), "--recipe", "static_wi8_ai8", "--signature",
                             "decode"], "decode"),
        "samples": ([f, "--samples", "0"], "--samples must be at least 1"),
        "two recipes": ([f, "--recipe", "static_wi8_ai8", "--custom-recipe", "x.json"],
                        "not allowed with argument"),
    }


def test_bad_input_is_one_line_and_no_file(tmp_path, capsys):
    out = tmp_path / "q.tflite"
    for name, (args, words) in _errors(tmp_path).items():
        for existing in (None, b"an older model"):
            if existing is None:
                out.unlink(missing_ok=True)
            else:
                out.write_bytes(existing)
            assert main(["quantize", *args, "-o", str(out)]) == 2, name
            _one_line_error(capsys, words, after_work=name == "refused")
            assert (out.read_bytes() == existing) if existing else not out.exists(), name
            assert not list(tmp_path.glob(".q.tflite.*")), name


_WITHOUT_QUANTIZER = r"""
import sys
sys.modules["litert_quantizer"] = None   # as if the [quantize] extra were not installed
from tflite_viewer.cli import main
from tflite_viewer.quant import recipes, requantize
print("available", recipes.quantizer_available())
print("rc", main(["quantize", sys.argv[1], "-o", sys.argv[2]]))
print("rc quant", main(["quant", sys.argv[3], "--samples", "1", "--json"]) == 0)
"""


def test_without_the_quantizer_one_line_says_how_to_install_it(tmp_path):
    out = tmp_path / "q.tflite"
    r = subprocess.run([sys.executable, "-c", _WITHOUT_QUANTIZER, str(CONV), str(out),
                        str(SMALL_INT8)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "available False\nrc 2\n" in r.stdout and "rc quant True" in r.stdout
    error, *others = r.stderr.splitlines()  # the others: quant's progress
    assert all(ln.startswith("[") for ln in others), r.stderr
    assert error.startswith("tflite-viewer quantize: error: quantizing needs LiteRT's "
                               "quantizer (litert-quantizer 0.11), the optional extra "
                               "[quantize]: pip install 'tflite-viewer[quantize]'")
    assert not out.exists()
    helped = subprocess.run([sys.executable, "-c", "import sys; sys.modules['litert_quantizer']"
                             " = None; from tflite_viewer.cli import main; "
                             "raise SystemExit(main(['quantize', '-h']))"],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert helped.returncode == 0 and helped.stdout.startswith("usage: tflite-viewer quantize")
