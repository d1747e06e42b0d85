"""Quantized SVDF: int8 input/output, int8 feature weights, int32 bias, and either

* int16 time weights and state: LiteRT's ``reference_ops::EvalIntegerSVDF`` with svdf.cc's
  Prepare (:func:`prepare_svdf`), or
* int8 time weights and state: TFLite Micro's ``EvalIntegerSvdfReference<int8_t>`` with
  svdf_common.cc's ``PrepareSvdf`` (:func:`prepare_svdf_micro`), as the tflite-micro
  Python wheel (0.dev20261023182759, pinned in the ``test`` extra) computes them.  LiteRT
  cannot run this flavour (it reads the int8 buffers as int16 and corrupts its heap);
  TFLM can, and is the reference here.

One step (:func:`svdf`, shared by both): the state (per batch and filter, ``memory`` values)
shifts left by one; the newest column is ``clamp_T(MBQM(sum_c w_feature[f, c] * (x[c] -
zp_in), scale_1)) + zp_state`` (narrowed to the state type T; see below); each filter's
int32 dot product of its time weights with ``state - zp_state`` is summed over the ``rank``
filters of a unit, the int32 bias added, and the result rescaled by scale_2 into int8
(offset by the output zero point, clamped to int8).

How the two flavours differ:

* Effective scales ``s_in * s_feature / s_state`` and ``s_state * s_time / s_out``: LiteRT
  multiplies and divides the float32 tensor scales as doubles.  TFLM's svdf_common.cc reads
  as float32 arithmetic widened to double afterwards, but the tflite-micro wheel's compiled
  PrepareSvdf widens each scale first and multiplies and divides in double (its
  disassembly: cvtss2sd, mulsd, divsd), and its outputs match double-precision multipliers
  on every probe and float32 ones on almost none
  (tests/interpreter/integer/test_svdf_micro.py).  So both flavours use the same double
  arithmetic here.
* State zero point: LiteRT assumes a symmetric int16 state and ignores its zero point; TFLM
  adds it to the new column and subtracts it in the time dot product (real int8 models such
  as keyword_scrambled_8bit use zero points like -50).  Where it is added matters: the
  tflite-micro wheel pinned for the tests, like TFLM's svdf_common.cc since the int8
  flavour was added, clamps the requantized value to int8 first and then adds the
  zero point, narrowing the sum into the int8 state with two's-complement wrap-around
  (-128 + -50 is stored as 78: tflite-micro issue #2721).  Newer svdf_common.cc (the fix
  for that issue, PR #3627) adds it before the clamp so that the sum saturates.  The
  wheel's order is the default here (it is what the pinned TFLM computes, on
  keyword_scrambled_8bit too); ``prepare_svdf_micro(..., zero_point_after_clamp=False)``
  gives the fixed order.
* Fused activation: LiteRT's Prepare only accepts RELU and then applies nothing beyond the
  int8 clamp; TFLM accepts any activation and likewise applies none in the integer path.
  Neither kernel applies the activation, so neither does this one.

Rounding: the ``tflite-micro`` Python wheel multiplies by quantized multipliers with
gemmlowp's double rounding, like the ai-edge-litert wheel (measured in
tests/interpreter/integer/test_svdf_micro.py on exact ties of the SVDF's own requantization, where
single rounding gives other values).  So the int8-state path needs no SVDF-specific
rounding: it follows the interpreter's ``rounding`` like every other kernel, whose default
"double" is also TFLM's (:data:`MICRO_ROUNDING`, the default of
:func:`prepare_svdf_micro`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import quant_math as qm
from .common import Rounding, check_rounding, int_matmul, qparams, wrap32

#: The rounding of the tflite-micro Python wheel's kernels (double, as LiteRT's wheel):
#: see the module docstring and tests/interpreter/integer/test_svdf_micro.py.
MICRO_ROUNDING: Rounding = "double"

_STATE_RANGES = {np.dtype(np.int16): (-32768, 32767), np.dtype(np.int8): (-128, 127)}


@dataclass(frozen=True)
class SvdfParams:
    scale_1_a: int
    scale_1_b: int
    scale_2_a: int
    scale_2_b: int
    input_zero_point: int
    output_zero_point: int
    rounding: Rounding
    #: added to the new state column, subtracted in the time dot product (TFLM); LiteRT's
    #: int16 flavour ignores it (0)
    state_zero_point: int = 0
    #: True: the state zero point is added after the clamp to the state type, and the sum
    #: narrowed with two's-complement wrap-around (the tflite-micro wheel); False: added
    #: before the clamp, so it saturates (newer svdf_common.cc: tflite-micro #2721)
    zero_point_after_clamp: bool = False


def prepare_svdf(input_q, weights_feature_q, weights_time_q, state_q, output_q,
                 rounding: Rounding = "double") -> SvdfParams:
    """LiteRT svdf.cc Prepare (full integer, int16 state): double scales, state zp 0."""
    rounding = check_rounding(rounding)
    iq, fq, tq, sq, oq = (qparams(q) for q in (input_q, weights_feature_q, weights_time_q,
                                               state_q, output_q))
    d = lambda v: float(np.float64(np.float32(v)))  # noqa: E731
    eff1 = d(iq.scale[0]) * d(fq.scale[0]) / d(sq.scale[0])
    eff2 = d(sq.scale[0]) * d(tq.scale[0]) / d(oq.scale[0])
    m1, s1 = qm.quantize_multiplier(eff1, rounding)
    m2, s2 = qm.quantize_multiplier(eff2, rounding)
    return SvdfParams(int(m1), int(s1), int(m2), int(s2), iq.zp, oq.zp, rounding)


def prepare_svdf_micro(input_q, weights_feature_q, weights_time_q, state_q, output_q,
                       rounding: Rounding = MICRO_ROUNDING,
                       zero_point_after_clamp: bool = True) -> SvdfParams:
    """TFLite Micro's PrepareSvdf (int8 input, int8 state) as the tflite-micro wheel runs it.

    The effective scales are :func:`prepare_svdf`'s (double arithmetic on the float32
    scales: see the module docstring); the state zero point is kept, and
    ``zero_point_after_clamp`` (default: the wheel's wrap-around) says where it is added.
    ``rounding`` defaults to the wheel's (:data:`MICRO_ROUNDING`, double rounding)."""
    p = prepare_svdf(input_q, weights_feature_q, weights_time_q, state_q, output_q, rounding)
    return replace(p, state_zero_point=qparams(state_q).zp,
                   zero_point_after_clamp=zero_point_after_clamp)


def svdf(input: np.ndarray, weights_feature: np.ndarray, weights_time: np.ndarray,
         bias: np.ndarray | None, state: np.ndarray, rank: int, params: SvdfParams
         ) -> tuple[np.ndarray, np.ndarray]:
    """One integer SVDF step: (int8 output [batch, units], new state [batch, filters *
    memory] of the state's dtype, int16 or int8)."""
    p = params
    batch = input.shape[0]
    n_filter, n_memory = weights_time.shape
    st = np.asarray(state)
    if st.dtype not in _STATE_RANGES:
        raise TypeError(f"SVDF state must be int16 or int8, not {st.dtype}")
    lo, hi = _STATE_RANGES[st.dtype]
    st = st.reshape(batch, n_filter, n_memory)
    new = np.empty_like(st)
    new[:, :, :-1] = st[:, :, 1:]
    x = input.reshape(batch, -1).astype(np.int64) - p.input_zero_point
    dot = wrap32(int_matmul(x, weights_feature.astype(np.int64).T))  # batch, filters
    dot = qm.multiply_by_quantized_multiplier(dot, p.scale_1_a, p.scale_1_b, p.rounding)
    if p.zero_point_after_clamp:  # the tflite-micro wheel: clamp, add, narrow (wraps)
        new[:, :, -1] = (np.clip(dot, lo, hi) + p.state_zero_point).astype(st.dtype)
    else:
        new[:, :, -1] = np.clip(wrap32(dot + p.state_zero_point), lo, hi)
    scratch = wrap32(np.einsum("bfm,fm->bf", new.astype(np.int64) - p.state_zero_point,
                               weights_time.astype(np.int64)))
    units = n_filter // rank
    out = wrap32(scratch.reshape(batch, units, rank).sum(axis=2))
    if bias is not None:
        out = wrap32(out + bias.astype(np.int64).reshape(1, -1))
    out = qm.multiply_by_quantized_multiplier(out, p.scale_2_a, p.scale_2_b, p.rounding)
    out = np.clip(out + p.output_zero_point, -128, 127).astype(np.int8)
    return out, new.reshape(batch, n_filter * n_memory)
