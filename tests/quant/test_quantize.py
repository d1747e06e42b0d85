"""`quant.recipes` and `quant.requantize`: the recipes, selectors and quantization the
``quantize`` command and the window run, against litert_quantizer itself.

* names and scopes: the named recipes are the ones the quantizer's resolver knows, built
  as it builds them; an op's scope is the quantizer's ``get_op_scope`` on its own reading
  of the model, for every op of every test model;
* selectors: the ops a selector names are the ops the quantizer's matching rule (its
  ``re.search`` on the scope, its op names) selects in its own reading of the model, and
  a float selector makes its `RecipeManager` give exactly those ops ``no_quantize``;
* equivalence: ``quantize(build_recipe(R))`` is byte for byte the model
  ``Quantizer`` writes for R (calibrated on the same samples); with overrides and float
  ops, the bytes and LiteRT's outputs equal those of ``Quantizer`` given the same JSON,
  and the written weights have the types the flags asked for.
"""
from __future__ import annotations

import functools
import json
import re

import numpy as np
import pytest

from tflite_viewer.model import durable, load_model
from tflite_viewer.quant import recipes, requantize
from tflite_viewer.quant.analysis import Cancelled

from . import llm_pairs as lp
from .helpers import MODELS, SMALL_FLOAT

CONVERTER_FLOATS = sorted(lp.CONVERTER.glob("*_float.tflite"))
SCOPE_MODELS = [lp.TINY_FLOAT, *CONVERTER_FLOATS, SMALL_FLOAT, MODELS / "control_flow.tflite",
                MODELS / "lstm_float.tflite"]
#: recipes of the equivalence sweep; the first ones run unmarked, the rest in the slow tier
SWEEP = ("dynamic_wi4b32_afp32", "static_wi8_ai8", "weight_only_wi8_afp32",
         "dynamic_wi8_afp32", "dynamic_wi4c_afp32", "dynamic_wi8b64_afp32",
         "weight_only_wi4_afp32", "static_wi8_ai16", "dynamic_wi4c_hr_afp32",
         "default_af32w8float")
SAMPLE = {("tiny_llama_f32", "dynamic_wi4b32_afp32"), ("tiny_llama_f32", "static_wi8_ai8"),
          ("conv_net_float", "static_wi8_ai8"), ("residual_mlp_float", "weight_only_wi8_afp32")}


@functools.cache
def theirs(path: str, recipe_json: str) -> bytes:
    """The model litert_quantizer's ``Quantizer`` writes for the recipe (JSON text), the
    static ones calibrated on 3 seeded samples of every signature; once per session."""
    from litert_quantizer import quantizer
    qt = quantizer.Quantizer(path, json.loads(recipe_json))
    calibration = None
    if qt.need_calibration:
        calibration = qt.calibrate(lp.signature_inputs(load_model(path), 3, seed=100))
    return bytes(qt.quantize(calibration, enable_progress_bar=False,
                             enable_progress_report=False).quantized_model)


def ours(path, recipe) -> bytes:
    model = load_model(path)
    samples = requantize.calibration_samples(model, count=3, seed=100) \
        if recipes.needs_calibration(recipe) else None
    return requantize.quantize(str(path), recipe, samples)


def litert_outputs(data: bytes, model) -> dict:
    """LiteRT's outputs of every signature on 2 seeded inputs (the float model's)."""
    from ai_edge_litert.interpreter import Interpreter
    out = {}
    for sig in model.signature_defs:
        for k, x in enumerate(lp.signature_inputs(model, 2, seed=7)[sig.key]):
            li = Interpreter(model_content=data)
            got = li.get_signature_runner(sig.key)(**x)
            out.update({(sig.key, k, name): v for name, v in got.items()})
    return out


def assert_same_outputs(a: dict, b: dict) -> None:
    assert a.keys() == b.keys() and a
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=str(key))


# -- names and scopes ---------------------------------------------------------------------
def test_the_named_recipes_are_the_quantizers():
    from litert_quantizer.utils import recipe_utils
    assert recipes.quantizer_available()
    recipe_utils._get_named_recipe("")  # fills the resolver's table of names
    known = set(recipe_utils._NAMED_RECIPES)
    names = recipes.recipe_names()
    assert {"dynamic_wi4b32_afp32", "static_wi8_ai8", "weight_only_wi8_afp32",
            "dynamic_wi8_afp32", "default_a8w8"} <= set(names)
    lists = {n for n in known if isinstance(recipe_utils.resolve_recipe(n), list)}
    assert set(names) == lists and known - lists  # the LiteRT-LM mappings are left out
    for n in names:
        assert recipes.named_recipe(n) == json.loads(json.dumps(recipe_utils.resolve_recipe(n)))


@pytest.mark.parametrize("path", SCOPE_MODELS, ids=lambda p: p.stem)
def test_scopes_are_the_quantizers(path):
    from litert_quantizer.utils import tfl_flatbuffer_utils as tfu
    fb = tfu.read_model(path.read_bytes())
    model = load_model(path)
    n = 0
    for s, sg in enumerate(fb.subgraphs):
        for k, op in enumerate(sg.operators):
            assert recipes.op_scope(model, s, k) == tfu.get_op_scope(op, sg.tensors), (s, k)
            n += 1
    assert n == sum(len(sg.operators) for sg in model.subgraphs) > 0


# -- selectors ----------------------------------------------------------------------------
def _their_selection(path, sel: recipes.Selector) -> set[tuple[int, int]]:
    """The ops the quantizer's rule selects for the selector's fields, on its own reading
    of the model: its op name for the op's code, ``re.search`` of the regex in its scope."""
    from litert_quantizer.utils import tfl_flatbuffer_utils as tfu
    fb = tfu.read_model(path.read_bytes())
    out = set()
    for s, sg in enumerate(fb.subgraphs):
        for k, op in enumerate(sg.operators):
            name = tfu.TFL_OP_CODE_TO_NAME.get(fb.operatorCodes[op.opcodeIndex].builtinCode)
            if sel.operation not in ("*", name):
                continue
            if re.search(sel.regex, tfu.get_op_scope(op, sg.tensors)):
                out.add((s, k))
    return out


SELECTORS = [  # (model, selector, kind, how many ops: counted in the models' op listings)
    (lp.TINY_FLOAT, "0:56", "op", 1),
    (lp.TINY_FLOAT, "1:106", "op", 1),
    (lp.TINY_FLOAT, "56", "op", 1),
    (lp.TINY_FLOAT, "FULLY_CONNECTED", "type", 17),
    (lp.TINY_FLOAT, "EMBEDDING_LOOKUP", "type", 2),
    (lp.TINY_FLOAT, "Linear_w2", "name", 3),
    (lp.TINY_FLOAT, r"TransformerBlock_1/.*Linear_qkv_projection;\d+;$", "name", 4),
    (lp.CONVERTER / "conv_net_float.tflite", "CONV_2D", "type", 2),
    (lp.CONVERTER / "conv_net_float.tflite", "3", "op", 1),
]


@pytest.mark.parametrize("path,text,kind,count", SELECTORS,
                         ids=[f"{p.stem}-{t[:24]}" for p, t, _, _ in SELECTORS])
def test_selectors_name_the_ops_the_quantizer_selects(path, text, kind, count):
    model = load_model(path)
    sel = recipes.select(model, text)
    assert sel.kind == kind and len(sel.ops) == count
    assert set(sel.ops) == _their_selection(path, sel)
    if kind == "op":
        s, k = (int(x) for x in text.split(":")) if ":" in text else (0, int(text))
        assert sel.ops == ((s, k),)
    if kind == "type":
        assert all(model.subgraphs[s].operators[k].name == text for s, k in sel.ops)
    # the quantizer's recipe manager gives these ops no_quantize, and no other op that
    # the base recipe quantizes
    base = recipes.named_recipe("weight_only_wi8_afp32")
    kept = recipes.build_recipe(model, base, keep_float=[text])
    known = {(s, k) for s, k in sel.ops
             if model.subgraphs[s].operators[k].name in recipes.quantizer_op_names().values()}
    assert known and _floated(path, kept) - _floated(path, base) == \
        known - _floated(path, base)
    assert known <= _floated(path, kept)


def _floated(path, recipe) -> set[tuple[int, int]]:
    """The ops the quantizer's recipe manager gives ``no_quantize`` under ``recipe``."""
    from litert_quantizer import recipe_manager
    from litert_quantizer.utils import tfl_flatbuffer_utils as tfu
    manager = recipe_manager.RecipeManager()
    manager.load_quantization_recipe(recipe)
    fb = tfu.read_model(path.read_bytes())
    out = set()
    for s, sg in enumerate(fb.subgraphs):
        for k, op in enumerate(sg.operators):
            name = tfu.TFL_OP_CODE_TO_NAME.get(fb.operatorCodes[op.opcodeIndex].builtinCode)
            if name is not None and manager.get_quantization_configs(
                    name, tfu.get_op_scope(op, sg.tensors))[0] == "no_quantize":
                out.add((s, k))
    return out


def test_the_quantizer_s_op_names_and_the_schema_s_both_select():
    model = load_model(lp.CONVERTER / "conv_net_float.tflite")
    names = recipes.quantizer_op_names()
    assert names["CONV_2D_TRANSPOSE"] == "TRANSPOSE_CONV" and names["FULLY_CONNECTED"] == \
        "FULLY_CONNECTED"
    by_schema = recipes.select(model, "CONV_2D")
    assert by_schema.operation == "CONV_2D" and by_schema.regex == ".*"


@pytest.mark.parametrize("text,words", [
    ("*attn*", "not a valid regular expression"),
    ("nothing_is_named_so", "matches no op"),
    ("LSTM", "the quantizer leaves LSTM ops in float"),
    ("DEPTHWISE_CONV_2D", "the model has no DEPTHWISE_CONV_2D op"),
    ("0:999", "subgraph 0 has no operator 999 (it has 84: 0..83)"),
    ("99:0", "no subgraph 99 (the model has 13)"),
])
def test_a_selector_that_selects_nothing_says_why(text, words):
    with pytest.raises(recipes.RecipeError, match=re.escape(words)):
        recipes.select(load_model(lp.TINY_FLOAT), text)


# -- building -----------------------------------------------------------------------------
def test_later_flags_win_in_this_tool_and_in_the_quantizer():
    """A type override, then a name override, then a float op: the recipe lists them in
    that order, loads back unchanged (the quantizer files them as listed), and its
    manager gives each op the last one that selects it."""
    from litert_quantizer import recipe_manager
    model = load_model(lp.TINY_FLOAT)
    recipe = recipes.build_recipe(
        model, "dynamic_wi4b32_afp32",
        overrides=[("FULLY_CONNECTED", "weight_only_wi8_afp32"), ("Linear_w2", "dynamic_wi8_afp32")],
        keep_float=["0:64"])
    assert [e["algorithm_key"] for e in recipe] == ["min_max_uniform_quantize"] * 3 + ["no_quantize"]
    assert len({e["regex"] for e in recipe}) == 4  # a taken regex is wrapped, not merged
    manager = recipe_manager.RecipeManager()
    manager.load_quantization_recipe(recipe)
    assert json.loads(json.dumps(manager.get_quantization_recipe())) == recipe
    settings = recipes.op_settings(model, recipe)
    w2 = recipes.select(model, "Linear_w2").ops
    assert settings[(0, 64)] == "float"
    assert {settings[k] for k in w2 if k != (0, 64)} == {"dynamic w8 channel"}
    others = set(recipes.select(model, "FULLY_CONNECTED").ops) - set(w2)
    assert {settings[k] for k in others} == {"weight-only w8 channel"}
    assert settings[(0, 1)] == "dynamic w4 b32"  # the embedding keeps the base recipe


def test_an_override_is_narrowed_to_its_selector():
    """A recipe with its own regex, given for a name selector, selects the ops both
    select (the quantizer's manager says so)."""
    model = load_model(lp.TINY_FLOAT)
    own = [{**recipes.named_recipe("dynamic_wi8_afp32")[0], "regex": "Linear_w"}]
    recipe = recipes.build_recipe(model, "weight_only_wi4_afp32",
                                  overrides=[("TransformerBlock_1", own)])
    settings = recipes.op_settings(model, recipe)
    both = set(recipes.select(model, "Linear_w").ops) & \
        set(recipes.select(model, "TransformerBlock_1").ops)
    assert both and {settings[k] for k in both} == {"dynamic w8 channel"}
    fcs = set(recipes.select(model, "FULLY_CONNECTED").ops)
    assert {settings[k] for k in fcs - both} == {"weight-only w4 channel"}


def test_bad_recipes_say_why(tmp_path):
    model = load_model(lp.TINY_FLOAT)
    with pytest.raises(recipes.RecipeError, match=r"unknown recipe 'dynamic_wi4b32_afp3' \(did "
                                                 r"you mean dynamic_wi4b32_afp32\?\); the quant"):
        recipes.build_recipe(model, "dynamic_wi4b32_afp3")
    with pytest.raises(recipes.RecipeError, match="a LiteRT-LM recipe"):
        recipes.named_recipe("gemma4_mixed48")
    cases = {"broken.json": ("[{\"regex\": ", "not valid JSON"),
             "empty.json": ("[]", "is an empty list, not a recipe"),
             "keyless.json": ('[{"regex": ".*", "operation": "*"}]', "'algorithm_key' is missing from an entry"),
             "no_weights.json": ('[{"regex": ".*", "operation": "*", "algorithm_key": '
                                 '"min_max_uniform_quantize", "op_config": {}}]',
                                 "'weight_tensor_config' is missing from an entry"),
             "algo.json": ('[{"regex": ".*", "operation": "*", "algorithm_key": "best", '
                           '"op_config": {"weight_tensor_config": {"num_bits": 8}}}]',
                           "Unsupported algorithm key: best"),
             "mapping.json": ('{"tf_lite_prefill_decode": "dynamic_wi8_afp32"}', "a LiteRT-LM recipe")}
    for name, (text, words) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(recipes.RecipeError, match=re.escape(words)):
            recipes.load_recipe(tmp_path / name)
    with pytest.raises(recipes.RecipeError, match="no entry of that recipe concerns CONV_2D"):
        fc_only = [{**recipes.named_recipe("dynamic_wi8_afp32")[0], "operation": "FULLY_CONNECTED"}]
        recipes.build_recipe(load_model(lp.CONVERTER / "conv_net_float.tflite"),
                             "dynamic_wi8_afp32", overrides=[("CONV_2D", fc_only)])


# -- equivalence --------------------------------------------------------------------------
def _sweep():
    out = []
    for path in [lp.TINY_FLOAT, *CONVERTER_FLOATS]:
        for name in SWEEP:
            marks = [] if (path.stem, name) in SAMPLE else [pytest.mark.slow]
            out.append(pytest.param(path, name, marks=marks, id=f"{path.stem}-{name}"))
    return out


@pytest.mark.parametrize("path,name", _sweep())
def test_a_named_recipe_writes_the_quantizer_s_bytes(path, name):
    """The same bytes, or the same refusal (block 32 on residual_mlp's 12-wide layers)."""
    recipe = recipes.build_recipe(load_model(path), name)
    assert recipe == recipes.named_recipe(name)  # alone, the recipe is the quantizer's
    try:
        want = theirs(str(path), json.dumps(recipe))
    except ValueError as exc:
        with pytest.raises(requantize.QuantizeError) as info:
            ours(path, recipe)
        assert str(info.value) == f"the quantizer refused it: ValueError: {exc}"
        return
    assert ours(path, recipe) == want


def test_overrides_and_float_ops_are_the_quantizer_s_model(tmp_path):
    """The recipe built, saved as JSON and given to ``Quantizer`` by path (as ``litert
    quantize --custom-recipe`` does): the same bytes, the same LiteRT outputs bit for
    bit, and the written weights are of the types asked for."""
    model = load_model(lp.TINY_FLOAT)
    recipe = recipes.build_recipe(model, "dynamic_wi4b32_afp32",
                                  overrides=[("Linear_w2", "dynamic_wi8_afp32")],
                                  keep_float=["1:53", "EMBEDDING_LOOKUP"])
    saved = tmp_path / "recipe.json"
    saved.write_text(json.dumps(recipe, indent=2))
    from litert_quantizer import quantizer
    qt = quantizer.Quantizer(str(lp.TINY_FLOAT), str(saved))
    reference = bytes(qt.quantize(enable_progress_bar=False,
                                  enable_progress_report=False).quantized_model)
    got = ours(lp.TINY_FLOAT, recipe)
    assert got == reference
    assert_same_outputs(litert_outputs(got, model), litert_outputs(reference, model))
    qm = load_model(got)
    types = {}
    for sg in qm.subgraphs[:2]:
        for op in sg.operators:
            if op.name in ("FULLY_CONNECTED", "EMBEDDING_LOOKUP"):
                out_name = sg.tensors[op.outputs[0]].name
                w = sg.tensors[op.inputs[1]]  # the weight, the lookup's table
                types[out_name] = w.type_name
    fm_sg = model.subgraphs
    name_of = {k: fm_sg[k[0]].tensors[fm_sg[k[0]].operators[k[1]].outputs[0]].name
               for k in recipes.select(model, "FULLY_CONNECTED").ops}
    w2 = set(recipes.select(model, "Linear_w2").ops)
    for k, name in name_of.items():
        want = "FLOAT32" if k == (1, 53) else "INT8" if k in w2 else "INT4"
        assert types[name] == want, (k, name)
    emb = [types[fm_sg[s].tensors[fm_sg[s].operators[k].outputs[0]].name]
           for s, k in recipes.select(model, "EMBEDDING_LOOKUP").ops]
    assert emb == ["FLOAT32", "FLOAT32"]


def test_static_calibration_on_an_npz_is_the_quantizer_s(tmp_path):
    """An .npz of 3 samples calibrates small_cnn as ``Quantizer.calibrate`` on the same
    arrays does."""
    model = load_model(SMALL_FLOAT)
    (spec_name,) = [m.name for m in model.signature("serving_default").inputs]
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3, 1, 32, 32, 3)).astype(np.float32)
    np.savez(tmp_path / "cal.npz", **{spec_name: x})
    recipe = recipes.build_recipe(model, "static_wi8_ai8", keep_float=["CONV_2D"])
    samples = requantize.calibration_samples(model, npz=tmp_path / "cal.npz")
    assert [list(s) for s in samples["serving_default"]] == [[spec_name]] * 3
    # a debugger session's inputs (given) are the same samples
    given = requantize.calibration_samples(model, given=[{spec_name: x[k]} for k in range(3)])
    for a, b in zip(given["serving_default"], samples["serving_default"], strict=True):
        assert a[spec_name].dtype == np.float32 and np.array_equal(a[spec_name], b[spec_name])
    got = requantize.quantize(str(SMALL_FLOAT), recipe, samples)
    from litert_quantizer import quantizer
    qt = quantizer.Quantizer(str(SMALL_FLOAT), recipe)
    cal = qt.calibrate({"serving_default": [{spec_name: x[k]} for k in range(3)]})
    assert got == bytes(qt.quantize(cal, enable_progress_bar=False,
                                    enable_progress_report=False).quantized_model)


def test_a_model_holding_variables_calibrates_a_signature_per_call(monkeypatch):
    """trained_lstm keeps its LSTM state in variables, which the calibrator resets after
    each call: fed one signature's samples per call (as ``Quantizer.calibrate`` feeds it)
    it gets the quantizer's bytes; a sample per call would give another model."""
    path = MODELS / "trained_lstm.tflite"
    recipe = recipes.build_recipe(load_model(path), "static_wi8_ai8")
    want = theirs(str(path), json.dumps(recipe))
    assert ours(path, recipe) == want
    monkeypatch.setattr(requantize, "_holds_variables", lambda model: False)
    assert ours(path, recipe) != want


# -- progress, cancel, refusals -----------------------------------------------------------
def test_progress_counts_up_to_the_end_and_cancel_stops_it():
    model = load_model(lp.TINY_FLOAT)
    recipe = recipes.build_recipe(model, "static_wi8_ai8")
    samples = requantize.calibration_samples(model, count=2)
    seen = []
    requantize.quantize(str(lp.TINY_FLOAT), recipe, samples,
                        progress=lambda d, t, m: seen.append((d, t, m)))
    done = [d for d, _, _ in seen]
    assert done == sorted(done) and seen[-1][0] == seen[-1][1] and len({t for _, t, _ in seen}) == 1
    assert [m for _, _, m in seen[:4]] == [f"calibrating on {k} ({n}/4)" for k, n in
                                           [("prefill_8", 1), ("prefill_8", 2), ("decode", 3),
                                            ("decode", 4)]]
    assert "choosing quantization parameters" in {m for _, _, m in seen}
    for stop_at in (1, 3, 50):  # in the calibration, at its end, among the ops
        calls = []
        with pytest.raises(Cancelled):
            requantize.quantize(str(lp.TINY_FLOAT), recipe, samples,
                                progress=lambda d, t, m: calls.append(d),
                                cancel=lambda: len(calls) >= stop_at)
        assert len(calls) == stop_at


def test_the_quantizer_s_refusals_are_one_line():
    path = MODELS / "control_flow.tflite"
    model = load_model(path)
    recipe = recipes.build_recipe(model, "static_wi8_ai8")
    with pytest.raises(requantize.QuantizeError, match="^the quantizer refused it: ValueError: "
                                                       "Tensor data is null") as info:
        requantize.quantize(str(path), recipe, requantize.calibration_samples(model, count=1))
    assert "\n" not in str(info.value)
    with pytest.raises(recipes.RecipeError, match="needs calibration samples"):
        requantize.quantize(str(path), recipe)
    no_signature = load_model(MODELS / "dilated_conv.tflite")
    with pytest.raises(recipes.RecipeError, match="has no signature"):
        requantize.calibration_samples(no_signature)
    with pytest.raises(recipes.RecipeError, match="no calibration data for signature 'decode'"):
        tiny = load_model(lp.TINY_FLOAT)
        data = requantize.calibration_samples(tiny, count=1)
        requantize.quantize(str(lp.TINY_FLOAT), recipes.build_recipe(tiny, "static_wi8_ai8"),
                            {"prefill_8": data["prefill_8"]})


def test_write_model_is_whole_or_nothing(tmp_path, monkeypatch):
    target = tmp_path / "q.tflite"
    target.write_bytes(b"old")
    target.chmod(0o640)
    requantize.write_model(target, b"new bytes")
    assert target.read_bytes() == b"new bytes" and (target.stat().st_mode & 0o777) == 0o640

    def broken(*a):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(durable, "sync", broken)  # the disk fills before the data is down
    with pytest.raises(OSError, match="No space left"):
        requantize.write_model(target, b"newer")
    assert target.read_bytes() == b"new bytes" and sorted(tmp_path.iterdir()) == [target]
