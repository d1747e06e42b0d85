"""A decoder block in the four forms LLM exports take (float32, weight-only int8, dynamic
int8, int4 blockwise: llm_models.decoder_model), every tensor against LiteRT 2.3.0's
builtin kernels.

The oracle is BUILTIN_WITHOUT_DEFAULT_DELEGATES, not BUILTIN_REF: LiteRT's reference
FULLY_CONNECTED has no blockwise path (it returns the bias), and the default XNNPACK
delegate would replace the builtin kernels by its own arithmetic.

Two comparisons per model:

* **op by op**: each op of ours reads LiteRT's values of its inputs (`ours_run_fed`), so
  each kernel is judged on exactly what LiteRT's kernel saw.  EMBEDDING_LOOKUP,
  FULLY_CONNECTED with hybrid or blockwise weights, DEQUANTIZE, ADD, MUL and RSQRT are bit
  for bit.  MEAN, BATCH_MATMUL, SOFTMAX and FULLY_CONNECTED with float weights sum in
  another order than LiteRT's optimized float kernels (this interpreter follows the
  reference kernels' order and numpy's matrix product): a few float32 ulps, bounded here
  at 2e-6 of the tensor's range.
* **end to end**: our run alone.  A last-ulp difference upstream can move a hybrid or
  blockwise FULLY_CONNECTED's on-the-fly input quantization by one step, so the outputs
  agree within a tolerance, not bit for bit.  Measured over 20 seeds of each flavour: at
  most 4e-6 of a tensor's range (float32 5e-7, weight-only int8 4e-6, dynamic int8 3e-6,
  int4 blockwise 7e-7), and 6e-3 on the logits of a model whose rounding step flipped;
  bounded here at 2e-2 (1e-5 for float32).
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.model import load_model

from .llm_models import FLAVOURS, decoder_model, litert_run, ours_run, ours_run_fed

#: ops whose float sums run in a different order in LiteRT's optimized kernels
REORDERED = {"MEAN", "BATCH_MATMUL", "SOFTMAX"}


def _reordered(sg, op) -> bool:
    if op.opcode.name == "FULLY_CONNECTED":  # float weights: a float GEMM
        return sg.tensors[op.inputs[1]].type_name == "FLOAT32"
    return op.opcode.name in REORDERED


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    b64 = b.astype(np.float64)
    scale = max(1.0, float(np.max(np.abs(b64)))) if b.size else 1.0
    return float(np.max(np.abs(a.astype(np.float64) - b64), initial=0.0)) / scale


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_decoder_every_op_on_litert_inputs(flavour, seed):
    model, ids = decoder_model(flavour, np.random.default_rng(seed))
    ref = litert_run(model, [ids])
    fed = ours_run_fed(model, [ids], ref)
    sg = load_model(model).subgraphs[0]
    checked = set()
    for op in sg.operators:
        name = op.opcode.name
        for o in op.outputs:
            ours, theirs = fed[o], ref[o]
            assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
            if _reordered(sg, op):
                assert _rel(ours, theirs) <= 2e-6, f"op {op.index} {name}"
            else:
                assert np.array_equal(ours.view(np.uint8), theirs.view(np.uint8)), \
                    f"op {op.index} {name}: {_rel(ours, theirs):g} relative"
            checked.add(name)
    assert {"EMBEDDING_LOOKUP", "FULLY_CONNECTED"} <= checked


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_decoder_end_to_end(flavour):
    model, ids = decoder_model(flavour, np.random.default_rng(7))
    ref = litert_run(model, [ids])
    ours = ours_run(model, [ids])
    sg = load_model(model).subgraphs[0]
    tol = 1e-5 if flavour == "float32" else 2e-2
    for op in sg.operators:
        for o in op.outputs:
            assert _rel(ours[o], ref[o]) <= tol, f"op {op.index} {op.opcode.name}"
    # the embedding and the first projections see identical inputs: bit for bit
    first_fc = next(op for op in sg.operators if op.opcode.name == "FULLY_CONNECTED")
    lookup = sg.operators[0]
    assert lookup.opcode.name == "EMBEDDING_LOOKUP"
    assert np.array_equal(ours[lookup.outputs[0]], ref[lookup.outputs[0]])
    assert np.isfinite(ours[first_fc.outputs[0]]).all()
