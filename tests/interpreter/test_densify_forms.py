"""DENSIFY takes what LiteRT's densify.cc takes (issue 42 item 1): FLOAT32, FLOAT16 and
INT8 sparse constants in any quantization form, which it copies without reading (the
dense output keeps the parameters, read by its consumer).  Before, the kernel's default
declaration refused a per-channel INT8 weight that LiteRT ran bit-exact.

Checked on the model of the issue (a sparse INT8 weight, per channel, densified for an
int8 FULLY_CONNECTED): equal to LiteRT's builtin kernels bit for bit; and on the types
densify.cc's Eval refuses (UINT8, INT16), refused here too."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.edit.tree import ModelTree
from tflite_viewer.edit.writer import serialize
from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.schema import schema_generated as S

from .litert_meaning import LiteRTFailed, run_forked
from .llm_models import A, OpSpec, PerChannel, PerTensor, W, write_model
from .refusal_audit_models import densify_model, sparse_constant


def sparse_fc_int8(rng: np.random.Generator, axis_scales: int = 10) -> tuple[bytes, np.ndarray]:
    """x (INT8) -> FULLY_CONNECTED(DENSIFY(sparse INT8 weight [10, 16], per channel))."""
    w = rng.integers(-127, 128, (axis_scales, 16)).astype(np.int8)
    w[rng.random(w.shape) < 0.6] = 0
    scales = (rng.random(axis_scales) * 0.02 + 0.005).tolist()
    bias = rng.integers(-500, 500, axis_scales).astype(np.int32)
    model = write_model(
        [A((2, 16), "INT8", PerTensor(0.05, 3), name="x"),
         W(w, "INT8", PerChannel(scales, 0, 0), name="sparse_weight"),
         A(w.shape, "INT8", PerChannel(scales, 0, 0), name="weight"),
         W(bias, "INT32", PerChannel([0.05 * s for s in scales], 0, 0), name="bias"),
         A((2, axis_scales), "INT8", PerTensor(0.2, -4), name="out")],
        [OpSpec("DENSIFY", [1], [2]),
         OpSpec("FULLY_CONNECTED", [0, 2, 3], [4], "FullyConnectedOptions", {}, version=5)],
        [0], [4])
    tree = S.ModelT.InitFromPackedBuf(model, 0)
    t = tree.subgraphs[0].tensors[1]
    stored, t.sparsity = sparse_constant(w)
    tree.buffers[t.buffer].data = np.frombuffer(stored.tobytes(), np.uint8)
    x = rng.integers(-128, 128, (2, 16)).astype(np.int8)
    return serialize(ModelTree(tree)), x


@pytest.mark.parametrize("seed", range(3))
def test_sparse_per_channel_int8_weight_runs_as_litert(seed):
    model, x = sparse_fc_int8(np.random.default_rng(seed))
    interp = Interpreter(model)
    interp.set_inputs([x])
    interp.invoke()
    ours = interp.subgraphs[0].tensors[4].data
    theirs = run_forked(model, [x])
    np.testing.assert_array_equal(ours, theirs[4])
    np.testing.assert_array_equal(interp.subgraphs[0].tensors[2].data, theirs[2])


@pytest.mark.parametrize("tname", ["UINT8", "INT16"])
def test_types_densify_cc_refuses_are_refused(tname):
    model = densify_model(tname, np.random.default_rng(0))
    with pytest.raises(LiteRTFailed, match="not supported"):
        run_forked(model, [])
    with pytest.raises(UnsupportedOpError, match=rf"DENSIFY v1 input 0 .*{tname} is not "
                                                 "implemented here"):
        Interpreter(model)
