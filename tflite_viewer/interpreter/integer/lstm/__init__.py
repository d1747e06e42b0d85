"""Integer UNIDIRECTIONAL_SEQUENCE_LSTM, 8x8_16: int8 input/output/weights, int16 cell state.

Mirrors ``lstm_eval::EvalInteger8x8_16`` / ``LstmStepInteger8x8_16`` with
unidirectional_sequence_lstm.cc's ``PopulateQuantizedLstmParams8x8_16`` and
``PopulatePrecomputedZPTimesWeightsWithBias`` (LiteRT's unidirectional kernel has no 8x8_8
path: that one belongs to the full LSTM op).  Per step and gate (``i`` absent with CIFG):

* ``gate = clamp16(MBQM(bias_x + W_x (x - zp_x)) )``, then
  ``gate = clamp16(gate + MBQM(W_h (h - zp_h)))`` with the effective scales
  ``s_W * s_x / s_gate`` (``s_gate`` = 2^-12, or the gate intermediate's scale with layer
  normalization; without it the gate bias rides in ``bias_x``);
* peephole (``i``, ``f`` with the old cell, ``o`` with the new one):
  ``gate = clamp16(gate + MBQM(w_p * c, 2^cell_scale * s_p / s_gate))`` - over the first
  ``n_output`` values of each step's flat gate buffer, as LiteRT passes ``n_output`` for
  the vector size (the same as ``n_cell`` unless projection shrinks the output);
* layer normalization (``ApplyLayerNorm``): integer mean and variance, the inverse square
  root as a quantized multiplier, ``* coefficient + bias`` (which the C source writes in
  int32 arithmetic but LiteRT's build does not wrap: measured, so int64 here), rescaled by
  the coefficients' scale into Q3.12;
* gemmlowp's int16 ``logistic`` (i, f, o) or ``tanh`` (c) on Q3.12;
* cell: ``c = clip(sat16(RDBPOT(f * c, 15) + RDBPOT(i * g, 30 + cell_scale)))``;
* hidden: ``o * tanh(c)`` (Q0.15 each) requantized by ``2^-30 / s_hidden``; without
  projection plus the hidden zero point, clamped: the new output state.  With projection
  minus that zero point (LiteRT's b/246629213), clamped to an int8 vector ``v`` that
  ``clamp8(MBQM(bias_p + zp_hidden * rowsum(W_p) + W_p v) + zp_state)`` maps to the output
  state, clipped by the proj clip quantized with the output tensor's scale.

Speed (a step of a small LSTM is a few dozen numpy calls on tiny arrays, ~0.2-0.3 us
each whatever the size, so the call count is what matters): `_Runner` compiles each
sequence length into a flat program of numpy calls on preallocated buffers (16 per step
for a plain LSTM, from some thirty).  The input contributions of every step come from one
matmul and one requantization for the whole sequence.  A step is one float64 matmul of the
output state against every gate's recurrent weights side by side (the effective biases as
an extra row, the requantization multipliers folded in while float64 stays exact), the
double rounding's sign nudge as ``copysign``, the floor division with the step's input
contribution in float64 or int64, one clip and one table lookup for every gate and the
cell state's scaled form (`scaled`: its products with Q0.15 gates round as
RoundingDivideByPOT without a sign test), the cell update as one product ``[i, f] * [g, c]``
plus one add and one shift, one lookup of the new cell state's tanh (times the hidden
multiplier) with its rounding addend, and four calls to the new output state.

Modules: parameters.py (the constants LiteRT's Prepare computes, from arrays or from the
node's tensors), checks.py (which nodes this kernel runs), runner.py (the step programs
and `lstm_sequence`), program.py (their building blocks: calls, fixed multipliers, tables).
"""
from .checks import unsupported_reason
from .parameters import LstmParams, prepare_from_tensors, prepare_lstm
from .program import FixedMultiplier
from .runner import input_parts, lstm_sequence

__all__ = ["FixedMultiplier", "LstmParams", "input_parts", "lstm_sequence",
           "prepare_from_tensors", "prepare_lstm", "unsupported_reason"]
