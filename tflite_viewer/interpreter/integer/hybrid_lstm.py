"""Hybrid (dynamic-range) UNIDIRECTIONAL_SEQUENCE_LSTM: float32 input, states and outputs,
int8 weights with one scale per tensor, float32 biases and layer-norm coefficients.

The specification is LiteRT's ``lstm_eval::EvalHybrid`` / ``LstmStepHybrid`` with
unidirectional_sequence_lstm.cc's hybrid Prepare (the temporaries that hold the int8 copies
of the input and output state, their scaling factors, zero points and the weight row sums).
Each step, for the whole batch:

* the input ``x_t`` and the previous output state ``h`` are quantized into int8, one scale
  per batch row: ``SymmetricQuantizeFloats`` (``q = round(v * 127 / max|v|)``), or, when the
  op's ``asymmetric_quantize_inputs`` option is set, ``AsymmetricQuantizeFloats`` (an int8
  zero point per row; the weights' row sums then remove it from the int32 dot products).
  A tensor that is all zeros is not quantized and its products are skipped: the same
  values as multiplying by zero, which is what this module does;
* each gate (``CalculateLstmGateHybrid``) starts from its float bias (zero with layer
  norm), adds ``float(dot(q_x, W_x) - rowsum(W_x) * zp_x) * (s_x * scale(W_x))`` and the
  same for ``h`` and the recurrent weights, adds the peephole term ``(scale(P) * P) * c``
  (the int8 cell-to-gate weights are dequantized first, ``VectorScalarMultiply``, then
  ``VectorBatchVectorCwiseProductAccumulate``), normalizes (``MeanStddevNormalization``:
  float32 mean and variance summed in order, ``1 / sqrt(var + 1e-8)``), multiplies by the
  layer-norm coefficients and adds the bias, then applies the sigmoid (input, forget,
  output gates) or the op's activation (cell gate);
* the cell (``UpdateLstmCellFloat``): ``c = f * c + g * i`` (``i = 1 - f`` with CIFG),
  clipped to ``cell_clip`` when it is positive; the output gate's peephole reads this new c;
* the output (``CalculateLstmOutputHybrid``): ``m = o * act(c)``; with projection weights
  ``m`` is quantized the same way and ``h = bias + float(dot) * (s_m * scale(P))``, clipped
  to ``proj_clip`` when positive; without projection ``h = m``.

Every float operation is float32 in LiteRT's order and the integer dot products are exact.
What the x86-64 ai-edge-litert wheel (2.3.0) runs beyond the portable reference code, and
this module reproduces, measured against it:

* the quantizers are the NEON ones (``NeonSymmetricQuantizeFloats``,
  ``NeonAsymmetricQuantizeFloats``, shared with the other hybrid kernels in `hybrid`): the
  build has SSE4.1, so neon_check.h enables USE_NEON through the NEON_2_SSE translator;
* sigmoid and tanh are Eigen's float approximations (SSE packets of 4, no FMA), and
  Eigen's logistic differs between packets and the scalar head and tail of each call, so
  which path a gate element takes follows the scratch buffer's layout
  (`sigmoid_packet_masks`).

With those, LiteRT's outputs and states come out bit for bit in nearly every case; the
rest differ by an ulp here and there (the C library's expf against a float64 exp rounded
to float32, in Eigen's scalar logistic).

Odd but reproduced: with the activation NONE, ``ApplyActivationToVector`` writes nothing,
so ``CalculateLstmOutputHybrid``'s scratch (the cell gate's buffer) keeps the cell gate
``g`` and the output is ``o * g``, not ``o * c``.  Refused rather than reproduced: weights
with per-channel scales (LiteRT reads ``params.scale``, which is 0 for them, and computes
with zero weights) and uint8 weights (read as int8); see `unsupported_reason`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .hybrid import asymmetric_quantize, symmetric_quantize
from .lstm.checks import gate_tensors_problem

# LSTM input indices (lstm_shared.h, ``lstm::full``)
INPUT = 0
INPUT_WEIGHTS = {"i": 1, "f": 2, "c": 3, "o": 4}
RECURRENT_WEIGHTS = {"i": 5, "f": 6, "c": 7, "o": 8}
PEEPHOLE_WEIGHTS = {"i": 9, "f": 10, "o": 11}
GATE_BIAS = {"i": 12, "f": 13, "c": 14, "o": 15}
PROJECTION_WEIGHTS, PROJECTION_BIAS = 16, 17
OUTPUT_STATE, CELL_STATE = 18, 19
LAYER_NORM = {"i": 20, "f": 21, "c": 22, "o": 23}

#: Activations ApplyActivationToVector knows (the schema has no SIGMOID for options).
ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT")

_FLOAT32, _INT8 = 0, 9  # TensorType values
_ONE = np.float32(1.0)
_LN_EPSILON = np.float32(1e-8)


@dataclass
class HybridMatrix:
    """An int8 weight matrix [rows, cols] as the hybrid matmuls use it."""

    #: the int8 values transposed to [cols, rows] as float64: an exact BLAS product with
    #: int8 vectors (every partial sum is far below 2**53)
    weights_t: np.ndarray
    #: ``params.scale`` (GetTensorScale), float32
    scale: np.float32
    #: ReductionSumVector of each row (only read with asymmetric input quantization)
    row_sums: np.ndarray

    @classmethod
    def of(cls, weights: np.ndarray, scale: float) -> "HybridMatrix":
        w = np.asarray(weights).astype(np.int64)
        return cls(np.ascontiguousarray(w.T.astype(np.float64)), np.float32(scale),
                   w.sum(axis=1))


@dataclass
class HybridGate:
    """One gate's parameters (CalculateLstmGateHybrid's arguments)."""

    input: HybridMatrix
    recurrent: HybridMatrix
    bias: np.ndarray                      # float32 [n_cell]
    #: the recovered peephole weights scale * int8 (VectorScalarMultiply), float32
    peephole: np.ndarray | None = None
    layer_norm: np.ndarray | None = None  # float32 [n_cell]


@dataclass
class HybridLstmParams:
    """What the hybrid kernel computes with, prepared once per node."""

    gates: dict[str, HybridGate] = field(default_factory=dict)  # no "i": CIFG
    projection: HybridMatrix | None = None
    projection_bias: np.ndarray | None = None
    activation: str = "TANH"
    cell_clip: np.float32 = np.float32(0)
    proj_clip: np.float32 = np.float32(0)
    asymmetric: bool = False

    @property
    def cifg(self) -> bool:
        return "i" not in self.gates


# -- load-time check -------------------------------------------------------------------
def _scale_count(t: Any) -> int:
    q = getattr(t, "quantization", None)
    return 0 if q is None else int(np.asarray(q.scale).size)


def unsupported_reason(inputs: Sequence[Any | None], options: Mapping[str, Any],
                       label: str) -> str | None:
    """Why a hybrid UNIDIRECTIONAL_SEQUENCE_LSTM cannot run here, or None.

    ``inputs`` are the node's runtime tensors by LSTM input index (None where omitted; each
    has ``type``, ``type_name``, ``shape``, ``quantization`` and ``is_variable``).  The rules
    are unidirectional_sequence_lstm.cc's Prepare and CheckInputTensorDimensions for a
    float32 input with int8 weights, plus what this kernel does not do: uint8 weights
    (LiteRT reads them as int8), per-channel weight scales (LiteRT reads ``params.scale``,
    which is 0 for them), diagonal (1-D) recurrent weights.
    """
    def get(k: int):
        return inputs[k] if k < len(inputs) else None

    if len(inputs) not in (20, 24):
        return f"{label}: needs 20 or 24 inputs (got {len(inputs)})"
    x = get(INPUT)
    if x is None or x.type != _FLOAT32:
        return f"{label}: the hybrid kernel needs a FLOAT32 input"
    if len(_shape(x)) != 3:
        return f"{label}: the input must have rank 3 (got shape {list(_shape(x))})"
    n_input = _shape(x)[2]
    if get(INPUT_WEIGHTS["o"]) is None or get(RECURRENT_WEIGHTS["o"]) is None:
        return f"{label}: input-to-output and recurrent-to-output weights are required"
    n_cell = _shape(get(INPUT_WEIGHTS["o"]))[0] if _shape(get(INPUT_WEIGHTS["o"])) else -1
    ro = _shape(get(RECURRENT_WEIGHTS["o"]))
    n_output = ro[1] if len(ro) == 2 else -1
    cifg = get(INPUT_WEIGHTS["i"]) is None
    if cifg != (get(RECURRENT_WEIGHTS["i"]) is None):
        return (f"{label}: input-to-input and recurrent-to-input weights must be both "
                "present or both absent")
    batch = _shape(x)[1] if options.get("time_major", False) else _shape(x)[0]
    layer_norm = len(inputs) == 24 and get(LAYER_NORM["f"]) is not None
    return (_weights_problem(get, label, cifg, n_cell, n_input, n_output)
            or _peephole_problem(get, label, cifg, n_cell)
            or _float_per_gate_problem(get, GATE_BIAS, cifg, n_cell,
                                       f"{label}: a CIFG LSTM must not have an input gate bias",
                                       f"{label}: the {{gate}} gate bias must be FLOAT32 of "
                                       f"shape [{n_cell}]")
            or _projection_problem(get, label, n_cell, n_output)
            or (_float_per_gate_problem(
                get, LAYER_NORM, cifg, n_cell,
                f"{label}: a CIFG LSTM must not have input layer-norm coefficients",
                f"{label}: {{gate}} layer-norm coefficients must be FLOAT32 of shape "
                f"[{n_cell}]") if layer_norm else None)
            or _state_problem(get, label, batch, n_cell, n_output)
            or _options_problem(options, label))


def _shape(t) -> tuple[int, ...]:
    return tuple(int(d) for d in (t.shape or ()))


def _float_per_gate_problem(get: Callable[[int], Any], positions: Mapping[str, int], cifg: bool,
                            n_cell: int, cifg_extra: str, missing: str) -> str | None:
    """`gate_tensors_problem` for per-gate FLOAT32 vectors of ``n_cell`` (biases, layer
    norm coefficients) at ``positions``."""
    return gate_tensors_problem({g: get(k) for g, k in positions.items()}, cifg,
                                lambda t: t.type == _FLOAT32 and _shape(t) == (n_cell,),
                                cifg_extra, missing)


def _weights_problem(get: Callable[[int], Any], label: str, cifg: bool, n_cell: int,
                     n_input: int, n_output: int) -> str | None:
    """The input and recurrent weights of every gate: present, per-tensor INT8, of shape
    [n_cell, n_input] and [n_cell, n_output]."""
    for gate in ("i", "f", "c", "o"):
        if gate == "i" and cifg:
            continue
        for table, cols, what in ((INPUT_WEIGHTS, n_input, "input"),
                                  (RECURRENT_WEIGHTS, n_output, "recurrent")):
            t = get(table[gate])
            if t is None:
                return f"{label}: {what}-to-{gate} weights are missing"
            if t.type != _INT8:
                return (f"{label} with FLOAT32 input: {what}-to-{gate} weights are {t.type_name}; "
                        "the hybrid kernel takes INT8 weights")
            if what == "recurrent" and len(_shape(t)) == 1:
                return f"{label} with diagonal (1-D) recurrent weights: not implemented"
            if _shape(t) != (n_cell, cols):
                return (f"{label}: {what}-to-{gate} weights have shape {list(_shape(t))}, "
                        f"expected {[n_cell, cols]}")
            if _scale_count(t) > 1:
                return (f"{label} with per-channel quantized {what}-to-{gate} weights: LiteRT's "
                        "hybrid LSTM reads one scale per tensor (params.scale, 0 when per-channel)")
    return None


def _peephole_problem(get: Callable[[int], Any], label: str, cifg: bool,
                      n_cell: int) -> str | None:
    """Peephole weights: all present or all absent, each per-tensor INT8 [n_cell]."""
    peep = {g: get(k) for g, k in PEEPHOLE_WEIGHTS.items()}
    some = any(t is not None for t in peep.values())
    if some and (peep["f"] is None or peep["o"] is None or (not cifg and peep["i"] is None)):
        return f"{label}: peephole weights must be all present or all absent"
    for g, t in peep.items():
        if t is None or (g == "i" and cifg):
            continue
        if t.type != _INT8 or _shape(t) != (n_cell,) or _scale_count(t) > 1:
            return (f"{label}: cell-to-{g} (peephole) weights must be per-tensor INT8 of shape "
                    f"[{n_cell}] (got {t.type_name} {list(_shape(t))})")
    return None


def _projection_problem(get: Callable[[int], Any], label: str, n_cell: int,
                        n_output: int) -> str | None:
    """The projection (per-tensor INT8 [n_output, n_cell], FLOAT32 bias), or, without
    one, as many outputs as cells."""
    proj, proj_bias = get(PROJECTION_WEIGHTS), get(PROJECTION_BIAS)
    if proj is None:
        if proj_bias is not None:
            return f"{label}: a projection bias without projection weights"
        if n_output != n_cell:
            return (f"{label}: without projection the output size ({n_output}) must equal "
                    f"the cell size ({n_cell})")
        return None
    if proj.type != _INT8 or _shape(proj) != (n_output, n_cell) or _scale_count(proj) > 1:
        return (f"{label}: projection weights must be per-tensor INT8 of shape "
                f"{[n_output, n_cell]} (got {proj.type_name} {list(_shape(proj))})")
    if proj_bias is not None and (proj_bias.type != _FLOAT32
                                  or _shape(proj_bias) != (n_output,)):
        return f"{label}: the projection bias must be FLOAT32 of shape [{n_output}]"
    return None


def _state_problem(get: Callable[[int], Any], label: str, batch: int, n_cell: int,
                   n_output: int) -> str | None:
    """The output and cell states: FLOAT32 variable tensors of batch x size elements."""
    for k, n, what in ((OUTPUT_STATE, n_output, "output"), (CELL_STATE, n_cell, "cell")):
        t = get(k)
        if t is None or not t.is_variable:
            return f"{label}: the {what} state must be a variable tensor"
        if t.type != _FLOAT32:
            return f"{label}: the {what} state must be FLOAT32 (got {t.type_name})"
        if int(np.prod(_shape(t), dtype=np.int64)) != batch * n:
            return (f"{label}: the {what} state has shape {list(_shape(t))}, expected "
                    f"{batch} x {n} elements")
    return None


def _options_problem(options: Mapping[str, Any], label: str) -> str | None:
    act = options.get("fused_activation_function") or "NONE"
    if str(act) not in ACTIVATIONS:
        return f"{label}: activation {act} is not supported"
    for key in ("cell_clip", "proj_clip"):
        if float(options.get(key) or 0.0) < 0:
            return f"{label}: {key} must not be negative"
    return None


# -- prepare -----------------------------------------------------------------------------
def prepare_hybrid_lstm(arrays: Sequence[np.ndarray | None], scales: Sequence[float],
                        options: Mapping[str, Any]) -> HybridLstmParams:
    """The node's parameters from its constant inputs.

    ``arrays[k]`` is the data of LSTM input k (None where omitted) and ``scales[k]`` its
    per-tensor ``params.scale`` (0 for an unquantized tensor, as TfLiteTensor has it);
    ``options`` the UnidirectionalSequenceLSTMOptions.  Layer norm is on when the forget
    gate's coefficients are present (24 inputs), as Prepare decides it.
    """
    def get(k: int) -> np.ndarray | None:
        return arrays[k] if k < len(arrays) else None

    use_ln = len(arrays) == 24 and get(LAYER_NORM["f"]) is not None
    p = HybridLstmParams(
        activation=str(options.get("fused_activation_function") or "NONE"),
        cell_clip=np.float32(options.get("cell_clip") or 0.0),
        proj_clip=np.float32(options.get("proj_clip") or 0.0),
        asymmetric=bool(options.get("asymmetric_quantize_inputs", False)))
    cifg = get(INPUT_WEIGHTS["i"]) is None
    peephole = get(PEEPHOLE_WEIGHTS["f"]) is not None
    for g in ("i", "f", "c", "o"):
        if g == "i" and cifg:
            continue
        wx, wh = INPUT_WEIGHTS[g], RECURRENT_WEIGHTS[g]
        gate = HybridGate(HybridMatrix.of(get(wx), scales[wx]),
                          HybridMatrix.of(get(wh), scales[wh]),
                          np.asarray(get(GATE_BIAS[g]), np.float32).reshape(-1))
        if peephole and g in PEEPHOLE_WEIGHTS:
            k = PEEPHOLE_WEIGHTS[g]
            # VectorScalarMultiply: float32 scale times each int8 value
            gate.peephole = (np.float32(scales[k])
                             * np.asarray(get(k)).astype(np.float32)).astype(np.float32)
        if use_ln:
            gate.layer_norm = np.asarray(get(LAYER_NORM[g]), np.float32).reshape(-1)
        p.gates[g] = gate
    if get(PROJECTION_WEIGHTS) is not None:
        p.projection = HybridMatrix.of(get(PROJECTION_WEIGHTS), scales[PROJECTION_WEIGHTS])
        if get(PROJECTION_BIAS) is not None:
            p.projection_bias = np.asarray(get(PROJECTION_BIAS), np.float32).reshape(-1)
    return p


# -- the step ----------------------------------------------------------------------------
@dataclass
class QuantizedRows:
    """BatchQuantizeFloats' results for one [batch, n] float tensor."""

    values: np.ndarray           # int8 values as float64 [batch, n] (exact BLAS operand)
    scaling_factors: np.ndarray  # float32 [batch]
    zero_points: np.ndarray      # int64 [batch] (zeros when symmetric)


def batch_quantize(v: np.ndarray, asymmetric: bool) -> QuantizedRows:
    """BatchQuantizeFloats: each row quantized on its own (symmetric or asymmetric)."""
    if asymmetric:
        q, sf, zp = asymmetric_quantize(v)
    else:
        q, sf = symmetric_quantize(v)
        zp = np.zeros(v.shape[0], np.int32)
    return QuantizedRows(q.astype(np.float64), sf.astype(np.float32), zp.astype(np.int64))


def accumulate_product(acc: np.ndarray, m: HybridMatrix, q: QuantizedRows | None,
                       asymmetric: bool) -> np.ndarray:
    """MatrixBatchVectorMultiplyAccumulate with a matrix scale: ``acc`` plus, per batch row
    and matrix row, ``float(dot - row_sum * zp) * (s_row * scale)`` in float32.  ``q`` None
    is an all-zero vector, whose product LiteRT skips (nothing is added)."""
    if q is None:
        return acc
    dot = (q.values @ m.weights_t).astype(np.int64)  # exact
    if asymmetric:
        dot -= q.zero_points[:, None] * m.row_sums[None, :]
    scale = (q.scaling_factors * m.scale).astype(np.float32)  # scaling_factor_scratch
    return acc + dot.astype(np.float32) * scale[:, None]


def _sequential_sum(v: np.ndarray) -> np.ndarray:
    """Row sums accumulated left to right in float32, as the C loop does (numpy's sum is
    pairwise)."""
    return np.cumsum(v, axis=1, dtype=np.float32)[:, -1]


def mean_stddev_normalization(v: np.ndarray) -> np.ndarray:
    """MeanStddevNormalization per row, in float32: (v - mean) / sqrt(variance + 1e-8)."""
    n = np.float32(v.shape[1])
    mean = (_sequential_sum(v) / n).astype(np.float32)
    diff = (v - mean[:, None]).astype(np.float32)
    variance = (_sequential_sum(diff * diff) / n).astype(np.float32)
    inv = (_ONE / np.sqrt(variance + _LN_EPSILON)).astype(np.float32)
    return diff * inv[:, None]


# -- Eigen's float sigmoid and tanh, as the ai-edge-litert 2.3.0 x86-64 wheel runs them ----
# tensor_utils' ApplySigmoidToVector / ApplyTanhToVector evaluate Eigen's ``logistic()`` and
# ``tanh()`` over an unaligned Map: SSE packets of 4 floats without FMA (measured: every
# value of the wheel's float LOGISTIC and TANH ops matches the emulation below).  Eigen peels
# scalars until the destination is 16-byte aligned, runs 4-wide packets, and finishes the
# tail with scalars; its float logistic differs between the two paths (a packet
# exp(x/2)^2 polynomial vs std::exp), its tanh does not.
_LOG2E = np.float32(1.44269504088896341)
_HALF = np.float32(0.5)
_EXP_C1, _EXP_C2 = np.float32(-0.693359375), np.float32(2.12194440e-4)
_LOGISTIC_HI, _LOGISTIC_LO = np.float32(16.6355324), np.float32(-104.0)
_LOGISTIC_P = [np.float32(c) for c in (0.49999141693115234375, 0.16666877269744873046875,
                                       4.1898667812347412109375e-2,
                                       8.33471305668354034423828125e-3)]
_TANH_CLAMP = np.float32(7.90738964080810547)  # without FMA
_TANH_ALPHA = [np.float32(c) for c in (1.394553628e-8, 2.102733560e-5, 3.520756727e-3,
                                       1.340216100e-1)]
_TANH_BETA = [np.float32(c) for c in (8.015776984e-7, 3.326951409e-4, 2.597254514e-2,
                                      4.673548340e-1, 1.0)]


def _polevl(x: np.ndarray, coeffs: Sequence[np.float32]) -> np.ndarray:
    """Eigen's ppolevl: Horner's rule, one float32 multiply and one add per coefficient."""
    p = np.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        p = p * x + c
    return p


def eigen_tanh(v: np.ndarray) -> np.ndarray:
    """Eigen's ptanh_float (EIGEN_FAST_MATH, no FMA): x clamped to +-7.907, then the 9/8
    rational x * P(x^2) / Q(x^2); the same for packets and scalars."""
    x = np.clip(np.asarray(v, np.float32), -_TANH_CLAMP, _TANH_CLAMP)
    x2 = x * x
    p = x2 * x * _polevl(x2, _TANH_ALPHA) + x
    return (p / _polevl(x2, _TANH_BETA)).astype(np.float32)


def _logistic_packet(v: np.ndarray) -> np.ndarray:
    """scalar_logistic_op<float>::packetOp: exp(x) = exp(x/2)^2 by range reduction and a
    degree-5 polynomial, then e / (1 + e); 0 below -104."""
    x = np.minimum(v, _LOGISTIC_HI) * _HALF
    m = np.floor(x * _LOG2E + _HALF)
    r = m * _EXP_C1 + x
    r = m * _EXP_C2 + r
    r2 = r * r
    p_even = r2 * _LOGISTIC_P[2] + _LOGISTIC_P[0]
    p_odd = r2 * _LOGISTIC_P[3] + _LOGISTIC_P[1]
    p = r * p_odd + p_even
    p = r2 * p + (r + _ONE)
    with np.errstate(over="ignore", under="ignore"):
        e = np.ldexp(p, np.clip(m, -300, 300).astype(np.int32)).astype(np.float32)
        e = e * e
        out = e / (_ONE + e)
    return np.where(v < _LOGISTIC_LO, np.float32(0), out).astype(np.float32)


def _logistic_scalar(v: np.ndarray) -> np.ndarray:
    """scalar_logistic_op<float>::operator(): e = expf(min(x, 16.64)), e / (1 + e).  expf is
    the C library's (glibc's is within 0.502 ulp): float64 exp rounded to float32 matches
    it but for rare double-rounding cases."""
    with np.errstate(over="ignore"):
        e = np.exp(np.minimum(v, _LOGISTIC_HI).astype(np.float64)).astype(np.float32)
    return (e / (_ONE + e)).astype(np.float32)


def eigen_packet_mask(start: int, size: int) -> np.ndarray:
    """Which of ``size`` floats written from float offset ``start`` of a 16-byte aligned
    buffer Eigen computes in 4-wide packets (the others: scalar head and tail)."""
    head = min((-start) % 4, size)
    body = (size - head) // 4 * 4
    mask = np.zeros(size, bool)
    mask[head:head + body] = True
    return mask


def sigmoid(v: np.ndarray, packet: np.ndarray | None = None) -> np.ndarray:
    """ApplySigmoidToVector: Eigen's logistic, the packet formula where ``packet`` is True
    (all of ``v`` when None), the scalar one elsewhere."""
    v = np.asarray(v, np.float32)
    out = _logistic_packet(v)
    if packet is not None and not packet.all():
        out = np.where(packet, out, _logistic_scalar(v))
    return out


def apply_activation(v: np.ndarray, act: str) -> np.ndarray:
    """ApplyActivationToVector for the op's activation; NONE returns ``v`` unchanged (the
    caller handles what LiteRT's NONE does to its output buffer)."""
    if act == "RELU":
        return np.maximum(v, np.float32(0))
    if act == "RELU_N1_TO_1":
        return np.minimum(np.maximum(v, np.float32(-1)), _ONE)
    if act == "RELU6":
        return np.minimum(np.maximum(v, np.float32(0)), np.float32(6))
    if act == "TANH":
        return eigen_tanh(v)
    if act == "SIGN_BIT":
        return np.signbit(v).astype(np.float32)
    return v


def _quantize_or_skip(v: np.ndarray, asymmetric: bool) -> QuantizedRows | None:
    """BatchQuantizeFloats unless IsZeroVector (then LiteRT skips the products)."""
    return None if not np.any(v) else batch_quantize(v, asymmetric)


def gate_value(gate: HybridGate, qx: QuantizedRows | None, qh: QuantizedRows | None,
               c: np.ndarray | None, batch: int, asymmetric: bool, act: str | None,
               packet: np.ndarray | None = None) -> np.ndarray:
    """CalculateLstmGateHybrid for a batch: the gate after its activation (``act`` None is
    the sigmoid, with Eigen's packet/scalar split ``packet``).  ``c`` is the cell state
    the peephole reads (None: no peephole term)."""
    n_cell = gate.bias.shape[0]
    ln = gate.layer_norm is not None
    acc = (np.zeros((batch, n_cell), np.float32) if ln
           else np.broadcast_to(gate.bias, (batch, n_cell)).astype(np.float32))
    acc = accumulate_product(acc, gate.input, qx, asymmetric)
    acc = accumulate_product(acc, gate.recurrent, qh, asymmetric)
    if gate.peephole is not None and c is not None:
        acc = acc + gate.peephole * c
    if ln:
        acc = mean_stddev_normalization(acc) * gate.layer_norm + gate.bias
    acc = acc.astype(np.float32)
    return sigmoid(acc, packet) if act is None else apply_activation(acc, act)


def sigmoid_packet_masks(cifg: bool, batch: int, n_cell: int, per_row: bool
                         ) -> dict[str, np.ndarray]:
    """Eigen's packet/scalar split of each sigmoid gate (see `eigen_packet_mask`).

    EvalHybrid's scratch buffer (an arena tensor, 64-byte aligned) holds the gates one
    after the other, ``n_batch * n_cell`` floats each: cell, forget, output with CIFG,
    else input, cell, forget, output.  A time-major sequence runs each gate's sigmoid once
    over the whole batch; a batch-major one runs one batch row at a time (n_batch = 1, the
    gate pointers offset by ``b * n_cell``)."""
    slots = ("c", "f", "o") if cifg else ("i", "c", "f", "o")
    masks = {}
    for k, g in enumerate(slots):
        if g == "c":
            continue
        base = k * n_cell * batch
        if per_row:
            masks[g] = np.stack([eigen_packet_mask(base + b * n_cell, n_cell)
                                 for b in range(batch)])
        else:
            masks[g] = eigen_packet_mask(base, n_cell * batch).reshape(batch, n_cell)
    return masks


def lstm_step(x: np.ndarray, h: np.ndarray, c: np.ndarray, p: HybridLstmParams,
              masks: Mapping[str, np.ndarray] | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """One LstmStepHybrid over a batch: (new output state [B, n_output], new cell state
    [B, n_cell]), both float32.  ``masks`` are `sigmoid_packet_masks` (default: the
    time-major layout)."""
    x = np.asarray(x, np.float32)
    h = np.asarray(h, np.float32)
    c = np.asarray(c, np.float32)
    asym = p.asymmetric
    qx = _quantize_or_skip(x, asym)
    qh = _quantize_or_skip(h, asym)
    batch, n_cell = c.shape
    if masks is None:
        masks = sigmoid_packet_masks(p.cifg, batch, n_cell, False)
    gates = p.gates
    i_gate = (None if p.cifg
              else gate_value(gates["i"], qx, qh, c, batch, asym, None, masks["i"]))
    f_gate = gate_value(gates["f"], qx, qh, c, batch, asym, None, masks["f"])
    g_gate = gate_value(gates["c"], qx, qh, None, batch, asym, p.activation)
    # UpdateLstmCellFloat
    if p.cifg:
        i_gate = (_ONE - f_gate).astype(np.float32)
    c = (f_gate * c + g_gate * i_gate).astype(np.float32)
    if p.cell_clip > 0:
        c = np.clip(c, -p.cell_clip, p.cell_clip).astype(np.float32)
    o_gate = gate_value(gates["o"], qx, qh, c, batch, asym, None, masks["o"])
    # CalculateLstmOutputHybrid (NONE leaves the scratch holding the cell gate)
    m = (o_gate * (g_gate if p.activation == "NONE" else apply_activation(c, p.activation))
         ).astype(np.float32)
    if p.projection is None:
        return m, c
    n_output = p.projection.weights_t.shape[1]
    out = (np.zeros((batch, n_output), np.float32) if p.projection_bias is None
           else np.broadcast_to(p.projection_bias, (batch, n_output)).astype(np.float32))
    out = accumulate_product(out, p.projection, _quantize_or_skip(m, asym), asym)
    if p.proj_clip > 0:
        out = np.clip(out, -p.proj_clip, p.proj_clip)
    return out.astype(np.float32), c


def lstm_sequence(x: np.ndarray, h: np.ndarray, c: np.ndarray, p: HybridLstmParams,
                  time_major: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EvalHybrid over [T, B, I] (time_major) or [B, T, I]: (outputs, final output state,
    final cell state), float32.

    LiteRT runs a batch-major sequence one batch row at a time; every quantization is per
    row, so running all rows together gives the same values."""
    seq = np.asarray(x, np.float32)
    if not time_major:
        seq = np.swapaxes(seq, 0, 1)
    steps, batch = seq.shape[0], seq.shape[1]
    h = np.asarray(h, np.float32).reshape(batch, -1)
    c = np.asarray(c, np.float32).reshape(batch, -1)
    outs = np.empty((steps, batch, h.shape[1]), np.float32)
    masks = sigmoid_packet_masks(p.cifg, batch, c.shape[1], not time_major)
    for t in range(steps):
        h, c = lstm_step(seq[t], h, c, p, masks)
        outs[t] = h
    return (outs if time_major else np.swapaxes(outs, 0, 1)), h, c
