"""No false acceptance of output types (type_rules.py): an operator whose output is
retyped, LiteRT as the oracle.

For the first operator of each type in a corpus model, output 0 is given another type
(INT32, or FLOAT32 where it was INT32) and the file is run by LiteRT 2.3.0's reference
kernels (allocate and invoke, in a forked child) and loaded here.  Where LiteRT refuses
it with a reason, this interpreter must refuse it too: before type_rules it ran 18 such
operator types, casting their values into the declared type.  (Where LiteRT crashes
instead, nothing is asserted.  LiteRT's builtin kernels run some of these files, reading a
tensor's bytes as the type they compute in: this interpreter refuses those, saying that
the reference kernels do; type_rules.py.)  Two small models run in every suite; every
corpus model is in the slow tier.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tflite_viewer.edit.tree import unpack
from tflite_viewer.edit.writer import serialize
from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.interpreter.type_rules import WHY
from tflite_viewer.model import ExecutionError, ModelFormatError, load_model

from .conftest import model_path
from .litert_meaning import LiteRTFailed, run_forked

MODELS = Path(model_path("sine_float.tflite")).parent
#: run in every suite: between them STRIDED_SLICE, PACK, SPACE_TO_BATCH_ND,
#: BATCH_TO_SPACE_ND, RELU, DEPTHWISE_CONV_2D, PAD, MAX_POOL_2D, CONCATENATION
SAMPLE = ("dilated_conv", "face_detection_short_range")
ALL = sorted(p.stem for p in MODELS.glob("*.tflite") if p.stat().st_size < 6_000_000)


def retyped_cases(name: str) -> list[tuple[str, int, int, bytes]]:
    """(operator name, operator index, new type, file) for the first operator of each
    type in ``name``'s main subgraph, its output 0 retyped."""
    model = load_model(MODELS / f"{name}.tflite")
    seen, cases = set(), []
    for op in model.subgraphs[0].operators:
        if op.name in seen or not op.outputs or op.outputs[0] < 0:
            continue
        seen.add(op.name)
        tree = unpack(model)
        tensor = tree.model.subgraphs[0].tensors[op.outputs[0]]
        new = 0 if tensor.type == 2 else 2
        tensor.type = new
        cases.append((op.name, op.index, new, serialize(tree)))
    return cases


def ours(data: bytes, tmp_path: Path) -> str | None:
    """Why this interpreter refuses the file, or None when it loads."""
    path = tmp_path / "retyped.tflite"
    path.write_bytes(data)
    try:
        Interpreter(load_model(path))
    except (UnsupportedOpError, ModelFormatError, ExecutionError) as exc:
        return str(exc)
    return None


def litert_refuses(data: bytes) -> str | None:
    """LiteRT's refusal (at allocate or invoke, zero inputs), or None when it runs."""
    model = load_model(data)
    inputs = [np.zeros([max(1, d) for d in (sg_t.shape or ())], sg_t.dtype)
              for sg_t in (model.subgraphs[0].tensors[i] for i in model.subgraphs[0].inputs)]
    try:
        run_forked(data, inputs, "BUILTIN_REF")
    except LiteRTFailed as exc:
        # a crash is LiteRT's own failure, not a verdict on the file (it segfaults on a
        # VAR_HANDLE's INT32 handle, which its READ_VARIABLE takes): not judged
        return None if "crashed" in str(exc) else str(exc)
    return None


def _check(name: str, tmp_path: Path) -> None:
    accepted = []
    for op_name, index, new, data in retyped_cases(name):
        refused_there = litert_refuses(data)
        if refused_there is not None and ours(data, tmp_path) is None:
            accepted.append(f"{op_name} (op {index}, output type {new}): LiteRT: "
                            f"{refused_there[:120]}")
    assert not accepted, "accepted what LiteRT refuses:\n" + "\n".join(accepted)


@pytest.mark.parametrize("name", SAMPLE)
def test_what_litert_refuses_for_its_output_type_is_refused(name, tmp_path):
    _check(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in ALL if n not in SAMPLE])
def test_what_litert_refuses_for_its_output_type_is_refused_every_model(name, tmp_path):
    _check(name, tmp_path)


def test_the_fuzzed_strided_slice_is_refused_as_litert_refuses_it(tmp_path):
    """The structural fuzz campaign's case (seed 4612): STRIDED_SLICE's output made
    COMPLEX128.  LiteRT: "strided_slice.cc:314 input->type != output->type"."""
    model = load_model(MODELS / "small_cnn_dilated_int8.tflite")
    tree = unpack(model)
    tree.model.subgraphs[0].tensors[22].type = 11  # COMPLEX128 (schema TensorType)
    data = serialize(tree)
    assert "strided_slice.cc" in (litert_refuses(data) or "")
    why = ours(data, tmp_path)
    assert why is not None and "STRIDED_SLICE" in why and WHY in why
    assert "output 0 is COMPLEX128, input 0 INT32" in why
