"""litert-quantizer 0.11's recipes that were refused at load (issue 38 items 2 and 3), on the
committed TinyLlama export quantized in the suite (recipe_models.py):

* **Hadamard rotation** (``dynamic_wi{8,4,2}c_hr_afp32``): each embedding table's row 0
  is all zeros, so its per-row scale is 0.  LiteRT loads and runs these models.  Here the
  zero scale is a finding (a warning in `info`, text and JSON, and so in the Problems
  dock, which lists the model's findings), and EMBEDDING_LOOKUP, which only multiplies a
  row by its scale, computes the zero row as LiteRT does.  Each model generates LiteRT's
  greedy tokens, its decode logits within 1e-5 of their magnitude (the float ops'
  summation order; tests/interpreter/test_generation.py's measure):
  - ``wi8c_hr`` and ``wi2c_hr`` against LiteRT's builtin kernels;
  - ``wi4c_hr`` against LiteRT's reference kernels and its default XNNPACK path, which
    agree with each other; LiteRT's builtin kernels compute it otherwise: the hybrid
    4-bit FULLY_CONNECTED of its optimized path (EvalHybridDense4Bit) cannot hold a
    weight of -8, and the Hadamard recipe writes 477 of them (the plain ``wi4c`` recipe
    none).  The first op that departs is the first INT4 FULLY_CONNECTED holding a -8.
* **INT2 blockwise** (``dynamic_wi2b{32,64}_afp32``): refused, saying that LiteRT 2.3.0
  computes the form without meaning; checked here: LiteRT's decode logits are all 0 and
  its greedy tokens all 0.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.litert_oracle import litert
from tflite_viewer.cli import main as cli_main
from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.model import ExecutionError, load_model

from . import test_generation as gen
from .recipe_models import HADAMARD, INT2_BLOCKWISE, quantized

KV = [f"kv_cache_{a}_{layer}" for a in "kv" for layer in range(2)]


def litert_loop(data: bytes, resolver: str):
    """(ids, decode logits) of LiteRT's loop (test_generation.litert_loop) with
    ``resolver``'s kernels."""
    li = litert(data, resolver, preserve=False)
    original = gen.litert
    gen.litert = lambda _data, preserve=False: li
    try:
        return gen.litert_loop(data, gen.PROMPT, gen.STEPS, KV)
    finally:
        gen.litert = original


@pytest.mark.parametrize("recipe", HADAMARD)
def test_zero_scales_are_findings_not_load_errors(recipe, tmp_path, capsys):
    data = quantized(recipe)
    model = load_model(data)
    flagged = [f for f in model.findings if "zero scale" in f.message]
    assert [(f.subgraph, f.severity) for f in flagged] == [(0, "warning"), (1, "warning")]
    for f in flagged:
        t = model.subgraphs[f.subgraph].tensors[f.tensor]
        assert t.quantization.scale[0] == 0 and not np.any(t.data()[0])  # an all-zero row
        assert "on 1 of 256 channels (channel 0)" in f.message
        assert "LiteRT loads it" in f.message and "read by EMBEDDING_LOOKUP op" in f.message
    assert not [f for f in model.findings if f.severity == "error"]
    path = tmp_path / "model.tflite"
    path.write_bytes(data)
    assert cli_main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.count("Problem: warning:") == 2 and "a zero scale on 1 of 256" in text
    assert cli_main(["info", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [f["severity"] for f in doc["findings"]] == ["warning", "warning"]


@pytest.mark.parametrize("recipe", ["dynamic_wi8c_hr_afp32", "dynamic_wi2c_hr_afp32"])
def test_hadamard_recipes_generate_what_litert_builtin_kernels_generate(recipe):
    data = quantized(recipe)
    result, logits = gen._ours(data)
    ref, ref_logits = litert_loop(data, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    assert result.tokens == ref and len(set(ref)) >= 4
    gen._agree(logits, ref_logits)


def test_hadamard_int4_generates_what_litert_reference_and_xnnpack_generate():
    """LiteRT's reference kernels and its default XNNPACK path agree, and ours by default
    (``auto``: the FULLY_CONNECTEDs whose INT4 weights hold -8 take the reference kernel)
    and with the reference set; an explicit builtin set refuses the -8s (the next test
    shows why)."""
    data = quantized("dynamic_wi4c_hr_afp32")
    with pytest.raises(ExecutionError, match="INT4 weights holding -8"):
        gen._ours(data, kernels="builtin")
    assert gen._ours(data, kernels="reference")[0].tokens == gen._ours(data)[0].tokens
    result, logits = gen._ours(data)
    ref, ref_logits = litert_loop(data, "BUILTIN_REF")
    xnnpack, _ = litert_loop(data, "BUILTIN")
    assert result.tokens == ref == xnnpack and len(set(ref)) >= 4
    gen._agree(logits, ref_logits)
    builtin, _ = litert_loop(data, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    assert builtin != ref  # (see the next test for where)


def _first_departure(data: bytes, subgraph: int, li, ours: Interpreter):
    """The first op of ``subgraph`` whose float output differs from LiteRT's by more than
    1e-4 of its magnitude."""
    sg = ours.model.subgraphs[subgraph]
    for op in sg.operators:
        o = op.outputs[0]
        try:
            theirs = li.get_tensor(o, subgraph)
        except ValueError:
            continue
        mine = ours.tensor(subgraph, o)
        if mine is None or theirs.dtype.kind != "f":
            continue
        finite = np.isfinite(theirs)
        scale = max(1.0, float(np.abs(theirs[finite]).max(initial=0)))
        if float(np.abs(np.where(finite, mine - theirs, 0)).max(initial=0)) > 1e-4 * scale:
            return op
    return None


def test_litert_builtin_departs_at_the_first_int4_fully_connected_holding_minus_8():
    from .test_llm_decoder import _inputs
    data = quantized("dynamic_wi4c_hr_afp32")
    li = litert(data)
    ours = Interpreter(data, kernels="reference")
    inputs = _inputs(0)
    li.get_signature_runner("prefill_8")(**inputs)
    ours.invoke(inputs, signature="prefill_8")
    s = ours.model.signature("prefill_8").subgraph_index
    op = _first_departure(data, s, li, ours)
    assert op is not None and op.name == "FULLY_CONNECTED"
    sg = ours.model.subgraphs[s]
    int4 = [o for o in sg.operators if o.name == "FULLY_CONNECTED"
            and sg.tensors[o.inputs[1]].type_name == "INT4"]
    holding = [o for o in int4 if np.any(sg.tensors[o.inputs[1]].data() == -8)]
    assert op.index == holding[0].index
    # the same op in LiteRT's reference kernels is ours
    ref = litert(data, "BUILTIN_REF")
    ref.get_signature_runner("prefill_8")(**inputs)
    assert _first_departure(data, s, ref, ours) is None
    plain = load_model(quantized("dynamic_wi4c_afp32")).subgraphs[s]
    assert not any(np.any(plain.tensors[o.inputs[1]].data() == -8) for o in plain.operators
                   if o.name == "FULLY_CONNECTED"
                   and plain.tensors[o.inputs[1]].type_name == "INT4")


@pytest.mark.parametrize("recipe", INT2_BLOCKWISE)
def test_int2_blockwise_is_refused_as_litert_computes_it_without_meaning(recipe):
    data = quantized(recipe)
    with pytest.raises(UnsupportedOpError) as info:
        Interpreter(data)
    message = str(info.value)
    assert "INT2 with blockwise" in message
    assert "LiteRT 2.3.0 computes this form without meaning" in message
    assert "not implemented here" not in message
    tokens, logits = litert_loop(data, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    assert tokens == [0] * gen.STEPS and not np.any(logits)
