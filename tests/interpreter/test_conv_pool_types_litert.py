"""Every type configuration LiteRT's conv and pool kernels run (tools/sweep_op_types.py's
conv and pool families), on random one-op models against LiteRT's reference kernels:
float32, uint8, int8 per tensor and per channel, int16x8 with an INT64 or INT32 bias,
int8 with INT4 weights, hybrid (float input, int8 weights).  Integers bit for bit, floats
within 1e-5 of the output's range.  And the configurations refused here on purpose, where
LiteRT reads past a buffer (its result is undefined)."""
from __future__ import annotations

import flatbuffers
import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.schema import schema_generated as S

from . import conv_pool_models as cp
from .singleop import assert_matches_litert, run_litert

#: (op, configuration) pairs LiteRT runs (measured with tools/sweep_op_types.py); the
#: per-tensor HYBRID depthwise case is refused here (see below)
RUN_BY_LITERT = [(op, c) for op in ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV")
                 for c in cp.CONV_CONFIGS
                 if (op, c) not in {("DEPTHWISE_CONV_2D", "INT16x8_BIAS32"),
                                    ("DEPTHWISE_CONV_2D", "HYBRID"),
                                    ("TRANSPOSE_CONV", "INT8_INT4_WEIGHTS")}] + \
    [("CONV_3D", "FLOAT32"), ("CONV_3D_TRANSPOSE", "FLOAT32"), ("L2_POOL_2D", "FLOAT32")] + \
    [(op, c) for op in ("AVERAGE_POOL_2D", "MAX_POOL_2D") for c in cp.POOL_CONFIGS]


#: the reference resolver (register_ref.cc) stops DEPTHWISE_CONV_2D at version 6
REF_VERSIONS = {**cp.VERSIONS, "DEPTHWISE_CONV_2D": 6}


@pytest.mark.parametrize("op,config", RUN_BY_LITERT, ids=[f"{o}-{c}" for o, c in RUN_BY_LITERT])
@pytest.mark.parametrize("seed", range(3))
def test_type_path_matches_litert(op, config, seed):
    rng = np.random.default_rng(1000 + seed)
    model, inputs = cp.build(op, config, REF_VERSIONS[op], rng)
    assert_matches_litert(model, inputs)


UNAPPLIED = [(op, c) for op, c in RUN_BY_LITERT
             if c in ("FLOAT32", "HYBRID", "HYBRID_PER_CHANNEL", "INT8")]


@pytest.mark.parametrize("op,config", UNAPPLIED, ids=[f"{o}-{c}" for o, c in UNAPPLIED])
@pytest.mark.parametrize("act", ["TANH", "SIGN_BIT"])
def test_tanh_and_sign_bit_fused_activations_are_not_applied(op, config, act):
    """The conv and pool kernels take their activation through CalculateActivationRange,
    which clamps only for RELU, RELU6 and RELU_N1_TO_1: a fused TANH or SIGN_BIT leaves
    the output as it is (the recurrent kernels do apply them)."""
    model, inputs = cp.build(op, config, REF_VERSIONS[op], np.random.default_rng(7), act)
    assert_matches_litert(model, inputs)


def _without_option(model: bytes, field: str) -> bytes:
    m = S.ModelT.InitFromPackedBuf(model, 0)
    setattr(m.subgraphs[0].operators[0].builtinOptions, field, 0)
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.mark.parametrize("op", ["CONV_2D", "TRANSPOSE_CONV"])
def test_int16_int32_bias_without_quantized_bias_type_is_refused(op):
    """conv.cc/transpose_conv.cc take the INT32-bias kernel only when the options'
    quantized_bias_type says INT32; otherwise they read the INT32 bias as INT64, past its
    end.  The same model with the option set runs (test above)."""
    model, _ = cp.build(op, "INT16x8_BIAS32", cp.VERSIONS[op], np.random.default_rng(1))
    Interpreter(model)  # with quantized_bias_type INT32
    with pytest.raises(UnsupportedOpError, match="reads that bias as INT64"):
        Interpreter(_without_option(model, "quantizedBiasType"))


def test_int16_depthwise_with_an_int32_bias_is_refused_as_litert_refuses_it():
    model, inputs = cp.build("DEPTHWISE_CONV_2D", "INT16x8_BIAS32", 6,
                             np.random.default_rng(2))
    with pytest.raises(Exception, match="failed to prepare"):
        run_litert(model, inputs)
    with pytest.raises(UnsupportedOpError, match="LiteRT wants INT64"):
        Interpreter(model)


def test_hybrid_depthwise_with_one_filter_scale_is_refused():
    """depthwise_conv.cc checks the scale count against the filter dimension that
    quantized_dimension names (0: of size 1), then reads one scale per output channel."""
    model, inputs = cp.build("DEPTHWISE_CONV_2D", "HYBRID", 7, np.random.default_rng(3))
    with pytest.raises(UnsupportedOpError, match="one per channel"):
        Interpreter(model)
