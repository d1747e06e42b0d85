"""Every float model of tests/data/models against LiteRT's reference kernels, tensor by
tensor (LiteRT keeps every intermediate with experimental_preserve_all_tensors).

Error metric: max |ours - LiteRT| / max(1, max |LiteRT|) per tensor, at most 1e-5, with
BLAS float sums (the default) and in the reference kernels' order.
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.model import load_model

from .conftest import model_path
from .singleop import rel_error

FLOAT_MODELS = [
    "mobilenet_v2_float", "mobilenet_v1_0.25_224_1_default_1", "mobilenet_v2_fp16",
    "sine_float", "small_cnn_dilated_float", "dilated_conv", "sparse_conv_float",
    "sparse_conv_fp16", "control_flow", "lstm_float", "multi_signature", "movie_review",
    "face_detection_short_range", "hand_landmark_lite", "palm_detection_lite", "trained_lstm",
]
TOL = 1e-5


def _litert(path, reference=True):
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    kind = OpResolverType.BUILTIN_REF if reference else OpResolverType.BUILTIN
    li = LiteRT(model_path=str(path), experimental_op_resolver_type=kind,
                experimental_preserve_all_tensors=True)
    li.allocate_tensors()
    return li


def make_inputs(name: str, model, seed: int) -> list[np.ndarray]:
    """Seeded inputs valid for the model: token ids inside the vocabulary, small loop counts."""
    rng = np.random.default_rng(seed)
    sg = model.subgraphs[0]
    out = []
    for i in sg.inputs:
        t = sg.tensors[i]
        if t.type_name == "INT32":
            if name == "movie_review":
                table = next(sg.tensors[op.inputs[0]] for op in sg.operators if op.name == "GATHER")
                out.append(rng.integers(0, table.shape[0], t.shape).astype(np.int32))
            else:
                out.append(np.asarray(rng.integers(0, 5), dtype=np.int32).reshape(t.shape))
        else:
            out.append(rng.standard_normal(t.shape).astype(np.float32))
    return out


def _read_tensors(model) -> set[int]:
    """Tensors of subgraph 0 that an op reads or the subgraph outputs (LiteRT leaves, for
    instance, the unread pass-through outputs of a WHILE uninitialised)."""
    sg = model.subgraphs[0]
    used = set(sg.outputs)
    for op in sg.operators:
        used.update(i for i in op.inputs if i >= 0)
    return used


def _runs(name: str) -> int:
    return 2 if name in ("control_flow", "lstm_float", "trained_lstm") else 1


def _reference(name: str) -> list[dict[int, np.ndarray]]:
    """LiteRT's reference kernels' value of every tensor `_read_tensors` names, after each
    of the model's runs (seeds 0, 1, ... in one interpreter, as ours runs them)."""
    path = model_path(name)
    model = load_model(path)
    li = _litert(path)
    out = []
    for seed in range(_runs(name)):
        for d, x in zip(li.get_input_details(), make_inputs(name, model, seed)):
            li.set_tensor(d["index"], x)
        li.invoke()
        out.append({i: li.get_tensor(i).copy() for i in sorted(_read_tensors(model))})
    return out


def compare_all(name: str, ours: Interpreter, reference: dict[int, np.ndarray],
                model) -> list[str]:
    bad = []
    sg = model.subgraphs[0]
    checked = 0
    for i, ref in reference.items():
        mine = ours.tensor(0, i)
        if mine is None:
            bad.append(f"tensor {i} ({sg.tensors[i].name}) not computed")
            continue
        if mine.shape != ref.shape:
            bad.append(f"tensor {i}: shape {mine.shape} != {ref.shape}")
            continue
        if ref.dtype.kind == "f":
            err = rel_error(mine, ref)
            if err > TOL:
                bad.append(f"tensor {i} ({sg.tensors[i].name}): error {err:g}")
        elif ref.dtype != object and not np.array_equal(mine, ref):
            bad.append(f"tensor {i} ({sg.tensors[i].name}): values differ")
        checked += 1
    assert checked > 0
    return bad


@pytest.mark.parametrize("name", FLOAT_MODELS)
def test_every_tensor_matches_litert_reference(name):
    """In both float sum modes (`interpreter.float_sums`: BLAS products by default), each
    against the same LiteRT run."""
    path = model_path(name)
    model = load_model(path)
    references = _reference(name)
    for sums in ("auto", "reference"):
        ours = Interpreter(model, float_sums=sums)
        for seed, reference in enumerate(references):
            ours.set_inputs(make_inputs(name, model, seed))
            ours.invoke()
            bad = compare_all(name, ours, reference, model)
            assert not bad, f"{name} ({sums} sums) run {seed}:\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("loops", [0, 1, 4])
def test_control_flow_loop_counts(loops):
    """control_flow's WHILE runs n times (and IF picks a branch) like LiteRT."""
    path = model_path("control_flow")
    li = _litert(path)
    ours = Interpreter(path)
    x = np.linspace(-1, 1, 4).astype(np.float32)
    runner = li.get_signature_runner("serving_default")
    ref = runner(x=x, n=np.int32(loops))
    out = ours.signature_runner("serving_default")(x=x, n=np.int32(loops))
    assert set(out) == set(ref)
    for k in ref:
        assert rel_error(out[k], ref[k]) <= TOL


def test_multi_signature_both_signatures():
    path = model_path("multi_signature")
    li = _litert(path)
    ours = Interpreter(path)
    rng = np.random.default_rng(0)
    assert sorted(ours.signature_keys()) == ["decode", "encode"]
    for key in ("encode", "decode"):
        ref_runner = li.get_signature_runner(key)
        names = list(ref_runner.get_input_details())
        inputs = {n: rng.standard_normal(ref_runner.get_input_details()[n]["shape"]).astype(np.float32)
                  for n in names}
        ref = ref_runner(**inputs)
        out = ours.signature_runner(key)(**inputs)
        assert set(out) == set(ref)
        for k in ref:
            assert rel_error(out[k], ref[k]) <= TOL
        # the same through run(inputs, signature=key)
        stop = ours.run(inputs, signature=key)
        assert stop.finished
        for k in ref:
            assert rel_error(stop.outputs[k], ref[k]) <= TOL


def test_resize_batch_matches_litert():
    """shape_signature -1 batch: resize_input and run a batch of 3."""
    path = model_path("mobilenet_v2_float")
    ours = Interpreter(path)
    x = np.random.default_rng(3).standard_normal((3, 96, 96, 3)).astype(np.float32)
    ours.resize_input(0, x.shape)
    ours.set_input(0, x)
    out = list(ours.invoke().values())[0]
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    li = LiteRT(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    li.resize_tensor_input(li.get_input_details()[0]["index"], x.shape)
    li.allocate_tensors()
    li.set_tensor(li.get_input_details()[0]["index"], x)
    li.invoke()
    ref = li.get_tensor(li.get_output_details()[0]["index"])
    assert out.shape == ref.shape == (3, 1000) or out.shape == ref.shape
    assert rel_error(out, ref) <= TOL
