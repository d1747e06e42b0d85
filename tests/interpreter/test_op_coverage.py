"""Op coverage against LiteRT's builtin op resolver: every op LiteRT registers runs here in
every version, or its gap has a written reason; docs/ops.md is the generated table and README states its figures;
Flex ops are refused with a message that they need TensorFlow."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tflite_viewer.cli import main as cli_main
from tflite_viewer.cli.ops import markdown
from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.interpreter.coverage import MISSING, VERSION_GAPS, coverage, summary
from tflite_viewer.interpreter.litert_builtins import LITERT_BUILTINS

from .singleop import Input, Op, graph_model, single_op_model

README = Path(__file__).resolve().parents[2] / "README.md"
ROWS = {r.name: r for r in coverage()}


def test_every_litert_builtin_runs_here_or_has_a_written_reason():
    unexplained = []
    for name in LITERT_BUILTINS:
        row = ROWS[name]
        if row.status == "litert only" and not MISSING.get(name, "").strip():
            unexplained.append(f"{name}: no kernel")
        if row.status == "versions" and not VERSION_GAPS.get(name, "").strip():
            unexplained.append(f"{name}: versions {row.here_versions} of {row.litert_versions}")
    assert not unexplained, "LiteRT runs these, this interpreter does not, no reason given: " \
        + "; ".join(unexplained)


def test_no_reason_is_left_for_an_op_that_is_covered():
    stale = [n for n in MISSING if ROWS[n].status != "litert only"]
    stale += [n for n in VERSION_GAPS if ROWS[n].status != "versions"]
    assert not stale, f"reasons left for covered ops: {stale}"


def _lone_op(op: str, version: int) -> bytes:
    return graph_model([], [Op(op, [], [], version=version)], [], [])


def test_litert_table_matches_the_installed_wheels_resolver():
    """The generated table's version ranges are what the wheel resolves (construction of a
    model holding the op fails with "Didn't find op" exactly outside them)."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    def resolves(op, version):
        try:
            LiteRT(model_content=_lone_op(op, version))
        except ValueError as exc:
            return "Didn't find op" not in str(exc)
        return True

    wrong = [op for op, (lo, hi, _, _) in LITERT_BUILTINS.items()
             if not resolves(op, hi) or resolves(op, hi + 1) or not resolves(op, lo)]
    assert not wrong
    assert len(LITERT_BUILTINS) == 172


def test_the_ops_page_is_the_generated_one_and_the_readme_states_its_figures():
    page = (README.parent / "docs" / "ops.md").read_text()
    assert markdown(list(ROWS.values())) in page, \
        "docs/ops.md is stale: run python tools/update_docs.py"
    figures = summary(list(ROWS.values()))
    assert f"{figures['covered']} of LiteRT's {figures['litert_builtins']}" in README.read_text()


def test_ops_json_is_strict_and_consistent(capsys):
    assert cli_main(["ops", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ops = {o["name"]: o for o in doc["ops"]}
    assert doc["summary"]["litert_builtins"] == 172 == sum(o["litert_versions"] is not None
                                                          for o in ops.values())
    assert ops["RSQRT"]["status"] == "both" and ops["RSQRT"]["versions"] == [[1, 3]]
    assert doc["summary"]["covered"] == sum(o["status"] in ("both", "versions")
                                            for o in ops.values())


def test_ops_text_report(capsys):
    assert cli_main(["ops"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^ADD_N\s+yes\s+1\s+1\s", out, re.M)
    assert "of LiteRT's 172 builtin ops run here" in out


def test_flex_ops_are_refused_as_needing_tensorflow():
    model = single_op_model("CUSTOM", [Input((2,))], [np.float32],
                            custom_code="FlexRaggedRange")
    with pytest.raises(UnsupportedOpError, match="Flex .*TensorFlow"):
        Interpreter(model)


def test_ops_forms_report(capsys):
    """`ops --forms`: op x activations x weight type x form, here and in LiteRT (the
    generated sweep, kept current by test_quant_forms_sweep.py)."""
    from tflite_viewer.interpreter.coverage import (RUNS_WHERE_LITERT_IS_WRONG, forms_coverage,
                                                    forms_summary)
    rows = forms_coverage()
    figures = forms_summary(rows)
    # every combination LiteRT's builtin kernels compute with meaning runs here
    assert figures["litert_runs"] == figures["litert_runs_here_runs"] > 80
    # everything LiteRT refuses is refused here
    assert figures["litert_refuses"] == figures["litert_refuses_here_refused"]
    # each combination LiteRT computes without meaning but run here has its reason
    loose = {(r.op, r.weight_type) for r in rows if r.litert == "wrong" and r.here == "runs"}
    assert loose and loose <= set(RUNS_WHERE_LITERT_IS_WRONG)
    blockwise = {(r.op, r.weight_type) for r in rows
                 if r.form == "blockwise" and r.here == "runs"
                 and not r.weight_type.startswith("FLOAT")}
    assert blockwise == {("FULLY_CONNECTED", "INT4"), ("EMBEDDING_LOOKUP", "INT4"),
                         ("EMBEDDING_LOOKUP", "INT2")}

    assert cli_main(["ops", "--forms"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^FULLY_CONNECTED\s+float\s+INT4\s+per-tensor, per-channel:0, blockwise /",
                     out, re.M)
    assert f"LiteRT's builtin kernels compute {figures['litert_runs']} with meaning" in out
    assert cli_main(["ops", "--forms", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"] == figures and len(doc["combinations"]) == len(rows)
    assert cli_main(["ops", "--forms", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("**Weights in every type") and "| EMBEDDING_LOOKUP | float | INT2 |" in md
    assert cli_main(["ops", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["weight_forms"]["summary"] == figures
