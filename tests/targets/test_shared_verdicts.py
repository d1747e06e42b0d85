"""The targets check each distinct operator key once and give every operator with that key
the same verdict (`SubgraphFacts.op_key`); the report must be the one that running every
operator through its target's rules gives (``share_verdicts=False``), and the JSON the
report writes itself must be the text ``json.dumps`` writes of its dict."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_targets import with_tanh
from benchmarks.synthetic_models import residual_model
from tflite_viewer.model import load_model
from tflite_viewer.targets import analyze
from tflite_viewer.delegation.facts import ModelFacts

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
CORPUS = sorted(MODELS.glob("*.tflite"))


def _residual_tanh(tmp_path: Path) -> Path:
    """Residual CONV_2D/ADD blocks, every third ADD with a fused TANH (XNNPACK refuses
    those): operators of one code whose keys differ by an option only."""
    path = tmp_path / "residual_tanh.tflite"
    path.write_bytes(with_tanh(residual_model(90)))
    return path


def _dumps(doc) -> str:
    return json.dumps(doc, allow_nan=False, separators=(",", ":"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_shared_verdicts_equal_per_operator_verdicts(path):
    assert len(CORPUS) >= 20  # the corpus is there (a missing folder would test nothing)
    model = load_model(path)
    shared = analyze(model)
    single = analyze(model, share_verdicts=False)
    assert shared.as_dict() == single.as_dict()
    assert shared.table() == single.table()
    doc = shared.as_dict()
    doc["model"] = path.name
    assert shared.as_json(model=path.name) == _dumps(doc)
    older = analyze(model, ["litert"], runtime="2.3.0")
    assert older.as_json() == _dumps(older.as_dict())


def test_option_differences_split_keys(tmp_path):
    model = load_model(_residual_tanh(tmp_path))
    shared, single = analyze(model), analyze(model, share_verdicts=False)
    assert shared.as_dict() == single.as_dict()
    xnn = [o for o in shared.results["xnnpack"].ops if o.op == "ADD"]
    refused = [o for o in xnn if o.verdict != "runs"]
    # every third ADD carries TANH: XNNPACK's ADD takes no fused TANH
    assert len(refused) == len(xnn) // 3 and all("TANH" in o.reason for o in refused)
    f = ModelFacts(model)[0]
    adds = [k for k in range(f.op_count) if f.builtin[k] == "ADD"]
    tanh = {k for k in adds if f.options(k)["fused_activation_function"] == "TANH"}
    assert {f.op_key(k) for k in tanh}.isdisjoint(f.op_key(k) for k in adds if k not in tanh)


def test_json_escapes_like_json_dumps(tmp_path):
    """Reasons and names with quotes, backslashes and non-ASCII text (a custom op's code)
    are encoded exactly as json.dumps encodes them."""
    from tflite_viewer.targets.verdict import OpVerdict, TargetResult

    ops = [OpVerdict(0, 0, 'my"op\\ü', "refused", "unresolved custom op 'my\"op\\ü'\n"),
           OpVerdict(0, 1, 'my"op\\ü', "refused", "unresolved custom op 'my\"op\\ü'\n")]
    result = TargetResult("tflm", "t", ops, notes=["é"])
    assert result.as_json() == _dumps(result.as_dict())


def _groups(keys: list[int]) -> list[frozenset[int]]:
    out: dict[int, set[int]] = {}
    for k, key in enumerate(keys):
        out.setdefault(key, set()).add(k)
    return sorted((frozenset(g) for g in out.values()), key=min)


@pytest.mark.parametrize("path", CORPUS[::3], ids=lambda p: p.stem)
def test_numpy_keys_group_operators_as_tuple_keys(path, tmp_path):
    """`_numbered_keys` (numpy rows) groups the operators exactly as the keys written out
    as tuples do, on corpus models and on operators differing by one option."""
    for model in (load_model(path), load_model(_residual_tanh(tmp_path))):
        facts = ModelFacts(model)
        for s in range(len(facts)):
            f = facts[s]
            if not f.op_count:
                continue
            assert _groups(f._numbered_keys()) == _groups(f._tuple_keys())
